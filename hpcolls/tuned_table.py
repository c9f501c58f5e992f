"""Tuned selection tables: the rows `python -m hpcolls tune` measures on the user's machine, the
file they are stored in, the key that says where they apply, and which table a communicator runs
under (docs/ARCHITECTURE.md#protocol-selection).

The plan's built-in table (native/hpcolls/plan.cpp) is the default. A tuned entry replaces its rows
of the collectives it has rows for, on a communicator whose key is the entry's: the same GPU model,
GPU count, ranks per GPU, rank count and kernel set (the hpcolls version and the plan's kernel
variants and protocols: crossovers measured on other kernels say nothing about these). The file
(HPCOLLS_TUNE_FILE, else $XDG_CACHE_HOME/hpcolls/selection.json, else ~/.cache/hpcolls/...) holds
several entries, one per key. A missing, mismatched, stale or unreadable file is never an error:
the built-in table stays in force and the reason is logged. Rank 0 reads and decides for every
rank (`agreed`): ranks running different tables would run different kernels for one call and wait
for each other until the time-out.
"""
import datetime
import json
import os
from dataclasses import dataclass, field

from . import log, settings

FORMAT = 1
# What a tuned entry must share with a communicator to be taken (all of it: the SM share a rank's
# kernels get, the bandwidth between ranks and the kernels themselves all move the crossovers).
KEY_FIELDS = ("gpu_model", "gpu_count", "ranks_per_gpu", "ranks", "kernel_set")
MACHINE_FIELDS = KEY_FIELDS[:-1]
OFF_VALUES = ("none", "off", "0")


@dataclass(frozen=True)
class InForce:
    """The selection table a communicator runs under: its own rows (() for the built-in table),
    where they came from (a file path, or None), the entry's key and date, and why (for the
    built-in table: why no stored one was taken)."""
    rows: tuple = ()
    path: object = None
    key: dict = field(default_factory=dict)
    date: str = ""
    reason: str = ""
    warn: bool = False  # a stored table is there but unusable (unreadable, stale, invalid rows): say so

    @property
    def tuned(self):
        return bool(self.rows)

    def describe(self):
        if not self.tuned:
            return f"the plan's built-in table ({self.reason})" if self.reason else "the plan's built-in table"
        key = ", ".join(f"{k} {self.key.get(k)}" for k in KEY_FIELDS)
        return f"tuned, from {self.path} (measured {self.date}; {key})"


def store_path(setting=None, env=None):
    """The tuned-table file later runs read and `tune` writes, from HPCOLLS_TUNE_FILE's value
    `setting` (None: read from `env`, default os.environ; a communicator passes its Config's):
    that path, or where empty the per-user cache; None where it turns tuned tables off."""
    value = settings.get("HPCOLLS_TUNE_FILE", env) if setting is None else setting.strip()
    if value.lower() in OFF_VALUES:
        return None
    if value:
        return os.path.expanduser(value)
    env = os.environ if env is None else env
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "hpcolls", "selection.json")


def kernel_set(native):
    """The identity of the kernels a table's crossovers were measured on."""
    from . import __version__
    return f"hpcolls {__version__}, {native.KERNEL_VARIANTS} kernel variants, protocols {'/'.join(native.PROTOCOLS)}"


def machine_key(comm, native, device, ranks_per_gpu):
    """The key of communicator `comm` whose rank runs on GPU `device`, `ranks_per_gpu` ranks sharing
    each GPU (peer_group.ranks_sharing_gpu's agreed count); collective, the same on every rank."""
    info = native.device_info(device)
    facts = comm.allgather((info["name"], info["uuid"]))
    return {"gpu_model": " + ".join(sorted({name for name, _ in facts})),
            "gpu_count": len({uuid for _, uuid in facts}),
            "ranks_per_gpu": int(ranks_per_gpu),
            "ranks": comm.Get_size(),
            "kernel_set": kernel_set(native)}


def read_entries(path):
    """(the file's entries, None), or ([], why they cannot be read); ([], None) where there is no
    file (the usual case before any `tune`)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return [], None
    except (OSError, ValueError) as exc:
        return [], f"{path} is unreadable ({exc.__class__.__name__}: {exc})"
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), list):
        return [], f"{path} is not a tuned-table file of format {FORMAT}"
    for i, entry in enumerate(data["entries"]):
        if not (isinstance(entry, dict) and isinstance(entry.get("key"), dict) and isinstance(entry.get("rows"), list)):
            return [], f"{path}: entry {i} has no key or rows"
    return data["entries"], None


def match(entries, key):
    """(the entry stored under `key`, None, False), or (None, why none is taken, whether that needs
    the user: True where one for this machine and rank count was measured on another kernel set
    (stale), False where there is none (mismatch))."""
    same_machine = [e for e in entries if all(e["key"].get(k) == key[k] for k in MACHINE_FIELDS)]
    for entry in same_machine:
        if entry["key"].get("kernel_set") == key["kernel_set"]:
            return entry, None, False
    if same_machine:
        return None, (f"stale: tuned on {same_machine[0]['key'].get('kernel_set')!r}, this build is "
                      f"{key['kernel_set']!r}; run python -m hpcolls tune again"), True
    shape = ", ".join(f"{k} {key[k]}" for k in MACHINE_FIELDS)
    return None, f"no entry for {shape} ({len(entries)} entr{'y' if len(entries) == 1 else 'ies'} for other keys)", False


def choose(path, key, check_rows):
    """The InForce for a communicator of `key` from the file at `path` (None: tuned tables off).
    check_rows(rows) raises ValueError where the rows cannot be a table (the native plan's check)."""
    if path is None:
        return InForce(reason="HPCOLLS_TUNE_FILE=none")
    entries, unreadable = read_entries(path)
    if unreadable:
        return InForce(reason=unreadable, warn=True)
    if not entries:
        return InForce(reason=f"no tuned table at {path}")
    entry, why, stale = match(entries, key)
    if entry is None:
        return InForce(reason=f"{path}: {why}", warn=stale)
    try:
        check_rows(entry["rows"])
    except (ValueError, TypeError) as exc:
        return InForce(reason=f"{path}: the entry's rows are not a table ({exc})", warn=True)
    if not entry["rows"]:
        return InForce(reason=f"{path}: the entry has no rows", warn=True)
    return InForce(rows=tuple(entry["rows"]), path=path, key=dict(entry["key"]), date=str(entry.get("date", "")))


def agreed(comm, native, device, ranks_per_gpu, setting=None):
    """The InForce of communicator `comm` under HPCOLLS_TUNE_FILE=`setting` (its Config's; None:
    the environment's), decided on rank 0 and the same on every rank; the reason
    a stored table was not taken is logged on rank 0 (a warning where a file is there but unusable,
    stale or invalid). Collective."""
    key = machine_key(comm, native, device, ranks_per_gpu)
    chosen = None
    if comm.Get_rank() == 0:
        try:
            chosen = choose(store_path(setting), key, native.check_selection_rows)
        except Exception as exc:  # noqa: BLE001 - a bad HPCOLLS_TUNE_FILE must not stop the communicator
            chosen = InForce(reason=f"tuned tables not read ({exc})", warn=True)
        _log_choice(chosen)
    return comm.bcast(chosen, root=0)


def _log_choice(chosen):
    if chosen.tuned:
        log.info(f"selection table: {chosen.describe()}")
    elif chosen.warn:
        log.warn_once(("tuned table", chosen.reason), f"selection table: built-in; the tuned one is ignored: "
                                                       f"{chosen.reason}")
    else:
        log.info_once(("tuned table", chosen.reason), f"selection table: built-in ({chosen.reason})")


def store(path, key, rows, measured=None, now=None):
    """Writes `rows` under `key` into the file at `path` (made, with its directory, where missing),
    replacing an entry of the same key and keeping the others; an unreadable file is replaced.
    Written to a temporary file first and renamed, so a reader never sees half a file. Returns the
    entry."""
    entries, _ = read_entries(path)
    date = (now or datetime.datetime.now(datetime.timezone.utc)).isoformat(timespec="seconds")
    entry = {"key": dict(key), "date": date, "rows": list(rows), **({"measured": measured} if measured else {})}
    entries = [e for e in entries if any(e["key"].get(k) != key[k] for k in KEY_FIELDS)] + [entry]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"format": FORMAT, "entries": entries}, f, indent=1)
    os.replace(tmp, path)
    return entry
