# shellcheck shell=bash
# Sourced by every jobs/*.sbatch template (never run on its own): the checks and settings they
# share, so that each template only says what is particular to it.

hpcolls_die() {
    echo "hpcolls job: ERROR: $*" >&2
    exit 2
}

# hpcolls_require NAME HINT: fail if the setting NAME is empty or still the CHANGE_ME placeholder.
hpcolls_require() {
    local value=${!1:-}
    if [[ -z $value || $value == *CHANGE_ME* ]]; then
        hpcolls_die "$1 is not set ($2). Edit it at the top of this script or pass $1=... to sbatch."
    fi
}

# hpcolls_start MODULE: everything a template does before its srun line.
hpcolls_start() {
    [[ -n ${SLURM_JOB_ID:-} ]] ||
        hpcolls_die "not inside a Slurm job: submit this script with sbatch."
    # Sites without accounting enforcement accept any account name, so a forgotten placeholder
    # would otherwise run and be charged to nobody (or be rejected later, at accounting time).
    [[ ${SLURM_JOB_ACCOUNT:-} != CHANGE_ME ]] ||
        hpcolls_die "the account is still CHANGE_ME: fix '#SBATCH --account' or submit with 'sbatch -A <account>'."
    [[ ${SLURM_JOB_PARTITION:-} != CHANGE_ME ]] ||
        hpcolls_die "the partition is still CHANGE_ME: fix '#SBATCH --partition' or submit with 'sbatch -p <partition>'."
    # The templates export it; refuse to run if an edit lost it (shared machines, NVLS stays off).
    [[ ${NCCL_NVLS_ENABLE:-} == 0 ]] ||
        hpcolls_die "NCCL_NVLS_ENABLE must be exported as 0 (NVLink multicast stays off on shared machines)."

    hpcolls_require ENV_SETUP "the commands that load your modules and activate your Python environment"
    eval "$ENV_SETUP" || hpcolls_die "ENV_SETUP failed: $ENV_SETUP"
    command -v python >/dev/null ||
        hpcolls_die "no 'python' on PATH after ENV_SETUP; activate the environment that has hpcolls in it."
    # Checked once here rather than failing in every rank at once.
    python -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)' "$1" ||
        hpcolls_die "python cannot find module $1 after ENV_SETUP (python is $(command -v python))."
    # hpcolls' PMPI staging library in front of the MPI library in every task (srun passes the
    # environment on): mpi4py's own Message, Datatype.Pack* and Op.Reduce_local calls then stage
    # device buffers on an MPI that is not CUDA-aware, as the communicator's methods do.
    local preload
    preload="$(python -m hpcolls preload)" ||
        hpcolls_die "hpcolls has no PMPI staging library (python -m hpcolls preload failed): rebuild hpcolls."
    export LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"

    # Some Slurm releases (from 22.05) do not pass --cpus-per-task from sbatch on to srun; say it again.
    if [[ -n ${SLURM_CPUS_PER_TASK:-} ]]; then
        export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
    fi
    # Log which rank took which GPU, and which collective path each size class took.
    export HPCOLLS_DEBUG=${HPCOLLS_DEBUG:-INFO}
    echo "hpcolls job $SLURM_JOB_ID: ${SLURM_JOB_NUM_NODES:-?} node(s), ${SLURM_NTASKS:-?} task(s)," \
         "python $(command -v python), started $(date -u '+%F %T') UTC"
}

# hpcolls_sygvd_options: the solver options a template does not set itself, from the environment
# (DEVICE=cpu sbatch ...), into the array SYGVD_OPTS.
hpcolls_sygvd_options() {
    SYGVD_OPTS=(
        --device "${DEVICE:-gpu}"             # gpu | cpu | auto
        --dtype "${DTYPE:-float64}"           # any dtype the solver accepts (python -m solvers.sygvd --help)
        --collectives "${COLLECTIVES:-auto}"  # auto | hpcolls | nccl | mpi: compare the paths
        --repeat "${REPEAT:-3}"               # timed solves (the solver's --help says how they are counted)
        --seed "${SEED:-$SLURM_JOB_ID}"       # fresh random matrices per job, reproducible from the log
    )
    # The process grid PRxPC; left out, the solver chooses one for the task count.
    if [[ -n ${GRID:-} ]]; then
        SYGVD_OPTS+=(--grid "$GRID")
    fi
}

# hpcolls_mps_dirs: node-local pipe and log directories for a CUDA MPS daemon owned by this job.
# Exported, so srun passes them to every task (the daemon and its clients must agree on them).
hpcolls_mps_dirs() {
    local base=${MPS_DIR:-/tmp/hpcolls-mps-$SLURM_JOB_ID}
    export CUDA_MPS_PIPE_DIRECTORY=$base/pipe
    export CUDA_MPS_LOG_DIRECTORY=$base/log
}
