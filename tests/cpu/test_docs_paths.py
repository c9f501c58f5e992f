"""Every repository path the docs and the code's comments name exists, and every cited anchor too.

A path is a run of path characters that starts with one of the repository's top-level folders
(native/..., hpcolls/..., docs/...) or is one of its top-level files (CMakeLists.txt): in
docs/*.md and README.md the whole text, in the sources under hpcolls/, solvers/, native/, jobs/
and tests/ their comments and Python's strings (docstrings). `dir/file.ext` must be a file,
`dir/dir/` a folder, a glob (`native/solvers/stein*`, `panel_factors*.{h,cu}`) must match, and a
name with neither slash nor extension at its end (`hpcolls/routes`) must be a file or a folder.
A path may also be one of the native include root's (`hpcolls/c_api.h` is native/include's), as
C++ includes and the comments about them name headers.
A bare `NAME.md` must be one of docs/ or the top level (a doc outside the repository is not one).

An anchor is cited as `docs/X.md#anchor` anywhere, and inside docs/ as a link `(X.md#anchor)` or
`(#anchor)`; it must be an explicit `<a id="anchor">` / `<a name="anchor">` of that doc or the
GitHub slug of one of its headings.
"""
import glob
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP_FOLDERS = ("native", "hpcolls", "solvers", "docs", "tests", "jobs")
TOP_FILES = ("CMakeLists.txt", "README.md", "pyproject.toml")
SOURCE_FOLDERS = ("hpcolls", "solvers", "native", "jobs", "tests")
INCLUDE_ROOT = ROOT / "native" / "include"
# This file names paths that do not exist on purpose: the examples its own checks must reject.
SELF = str(Path(__file__).resolve().relative_to(ROOT))

# A path: a top-level folder then path characters (globs and brace lists included), or a top-level
# file; not preceded by a character that would make it the tail of a longer path or name.
_PATH = re.compile(r"(?<![\w./$-])((?:%s)/[\w./*{},-]*|(?:%s)\b)" % (
    "|".join(TOP_FOLDERS), "|".join(re.escape(f) for f in TOP_FILES)))
_BARE_MD = re.compile(r"(?<![\w./-])([A-Za-z_]+\.md)\b")
_CITED_ANCHOR = re.compile(r"(?<![\w./-])docs/([\w-]+\.md)#([\w-]+)")
_LINK_ANCHOR = re.compile(r"\]\(([\w-]+\.md)?#([\w-]+)\)")
_EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
# Built by the install, never in the tree: the native modules and the PMPI staging library.
_BUILT = re.compile(r"\.so$")


def _tracked(*folders):
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", *folders], capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file there
        out = [str(p.relative_to(ROOT)) for f in folders for p in (ROOT / f).rglob("*") if p.is_file()]
    return sorted(out)


def _doc_files():
    return sorted(p for p in _tracked("docs", "README.md") if p.endswith(".md"))


def _python_text(source):
    """Comments and string literals (docstrings among them) of Python source."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    return "\n".join(t.string for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING))


def _c_text(source):
    """// and /* */ comments of C, C++ and CUDA source (string literals left out)."""
    found = re.findall(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', source, re.S)
    return "\n".join(f for f in found if not f.startswith('"'))


def _hash_text(source):
    """# comments of shell scripts, steps files, Slurm templates, CMake and TOML."""
    return "\n".join(m.group(0) for m in re.finditer(r"(?:^|(?<=\s))#[^\n]*", source))


def _commentary(path):
    """What of a source file is prose: its comments, and for Python its strings too."""
    text = (ROOT / path).read_text(errors="replace")
    suffix = Path(path).suffix
    if suffix == ".py":
        return _python_text(text)
    if suffix in (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp"):
        return _c_text(text)
    if suffix in (".sh", ".sbatch", ".steps", ".txt", ".toml", ".map", "") or path.endswith("CMakeLists.txt"):
        return _hash_text(text)
    return ""


def _texts():
    """(file, text to read for paths) of every doc and every source file."""
    for path in _doc_files():
        yield path, (ROOT / path).read_text()
    for path in _tracked(*SOURCE_FOLDERS):
        if path != SELF and not path.endswith((".png", ".json", ".npy", ".npz", ".mtx", ".tgz")):
            yield path, _commentary(path)


def _expand_braces(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [q for alt in m.group(1).split(",")
            for q in _expand_braces(pattern[:m.start()] + alt + pattern[m.end():])]


def _clean(token):
    """The path in a match, without the prose around it: a sentence's full stop or a comma after
    it, a brace that opens a list the text does not close."""
    token = token.rstrip(".,;:-")
    if token.count("{") != token.count("}"):
        token = token.split("{", 1)[0]
    return token


def _exists(path):
    if _BUILT.search(path):
        return True
    for root in (ROOT, INCLUDE_ROOT):
        if "*" in path or "{" in path:
            if any(glob.glob(str(root / p)) for p in _expand_braces(path)):
                return True
        elif (root / path).is_dir() if path.endswith("/") else (root / path).exists():
            return True
    return False


def _named_paths():
    for source, text in _texts():
        for m in _PATH.finditer(text):
            path = _clean(m.group(1))
            if "/" in path or path in TOP_FILES:
                yield source, path
        for m in _BARE_MD.finditer(text):
            yield source, m.group(1)


def _md_exists(name):
    return (ROOT / name).is_file() or (ROOT / "docs" / name).is_file()


def test_every_named_path_exists():
    missing = sorted({(source, path) for source, path in _named_paths()
                      if not (_md_exists(path) if "/" not in path and path.endswith(".md") else _exists(path))})
    assert not missing, "paths named but not in the repository:\n" + "\n".join(
        f"  {source}: {path}" for source, path in missing)


def github_slug(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation other than '-' and '_'
    dropped, spaces to '-'."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(doc):
    """Every anchor a doc defines: explicit ones and its headings' slugs (repeats numbered)."""
    text = (ROOT / doc).read_text()
    found = set(_EXPLICIT_ANCHOR.findall(text))
    seen = {}
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else _HEADING.match(line)
        if m:
            slug = github_slug(m.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _cited_anchors():
    for source, text in _texts():
        for m in _CITED_ANCHOR.finditer(text):
            yield source, f"docs/{m.group(1)}", m.group(2)
        if source.startswith("docs/") or source == "README.md":
            for m in _LINK_ANCHOR.finditer(text):
                here = Path(source).parent
                doc = str(here / m.group(1)) if m.group(1) else source
                yield source, doc, m.group(2)


def test_every_cited_anchor_exists():
    anchors = {}
    missing = []
    for source, doc, anchor in _cited_anchors():
        if not (ROOT / doc).is_file():
            missing.append(f"  {source}: {doc}#{anchor} (no such doc)")
            continue
        if doc not in anchors:
            anchors[doc] = anchors_of(doc)
        if anchor not in anchors[doc]:
            missing.append(f"  {source}: {doc}#{anchor}")
    assert not missing, "anchors cited but not defined:\n" + "\n".join(sorted(set(missing)))


@pytest.mark.parametrize("heading, slug", [
    ("Host time of one call (`python -m hpcolls.bench`, 1 × float64)", "host-time-of-one-call-python--m-hpcollsbench-1--float64"),
    ("solvers: subsets and a factored B", "solvers-subsets-and-a-factored-b"),
])
def test_slugs_follow_github(heading, slug):
    assert github_slug(heading) == slug


def test_the_checks_catch_what_they_are_for():
    """A path that is not there and a doc outside the repository are reported (the checks can
    fail), and a glob, a folder and a top-level file pass."""
    assert not _exists("native/src/fast_allreduce.cpp")
    assert not _md_exists("DESIGN.md")
    assert _exists("native/solvers/stein*") and _exists("native/hpcolls/") and _exists("CMakeLists.txt")
    assert _expand_braces("a*.{h,cu}") == ["a*.h", "a*.cu"]
    found = [_clean(m.group(1)) for m in _PATH.finditer("see native/hpcolls/plan.cpp, and tests/gpu/.")]
    assert found == ["native/hpcolls/plan.cpp", "tests/gpu/"]
