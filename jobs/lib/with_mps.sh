#!/bin/bash
# Usage (one task of an srun step): with_mps.sh COMMAND [ARGS...]
#
# Runs COMMAND with a CUDA MPS control daemon serving this node's GPUs, so that several ranks can
# share a GPU without time-slicing. The node's first task (SLURM_LOCALID=0) starts the daemon and
# stops it when it exits; every task waits for the daemon's control pipe before starting COMMAND.
# This is done inside the step rather than in the batch script because the batch script runs on
# the first node only, and Slurm kills daemons that outlive the step which started them.
set -euo pipefail

: "${CUDA_MPS_PIPE_DIRECTORY:?export CUDA_MPS_PIPE_DIRECTORY (hpcolls_mps_dirs in jobs/lib/common.sh)}"
: "${CUDA_MPS_LOG_DIRECTORY:?export CUDA_MPS_LOG_DIRECTORY (hpcolls_mps_dirs in jobs/lib/common.sh)}"
control=$CUDA_MPS_PIPE_DIRECTORY/control

if [[ ${SLURM_LOCALID:?run this under srun} == 0 ]]; then
    if [[ -p $control ]]; then
        echo "with_mps: $(hostname): an MPS daemon already serves $CUDA_MPS_PIPE_DIRECTORY; using it" >&2
    else
        mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
        nvidia-cuda-mps-control -d
        # 'quit' lets connected clients finish before the daemon goes. A rank that has not yet
        # connected is safe too when COMMAND is an MPI program, as every job here is: this
        # rank's program cannot end before every other rank has joined it, i.e. got past the
        # wait below. Unrelated commands that finish at once would race with late ranks.
        trap 'echo quit | nvidia-cuda-mps-control' EXIT
    fi
fi

# Bounded wait: a daemon that cannot start must fail the job, not leave every rank spinning.
for ((waited = 0; waited < ${MPS_WAIT_S:-60}; waited++)); do
    [[ -p $control ]] && break
    sleep 1
done
[[ -p $control ]] || {
    echo "with_mps: $(hostname): no MPS control pipe at $control after ${MPS_WAIT_S:-60} s;" \
         "see $CUDA_MPS_LOG_DIRECTORY/control.log" >&2
    exit 3
}

"$@"
