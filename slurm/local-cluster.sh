#!/usr/bin/env bash
# Start a real single-node Slurm (slurmctld + slurmd + munge) on this machine, for tests and demos.
#
#   sudo bash slurm/local-cluster.sh            # start (or check) the cluster; prints sinfo
#   sudo bash slurm/local-cluster.sh stop       # stop the daemons this script started (by pid file)
#   sudo bash slurm/local-cluster.sh status     # exit 0 when the cluster answers and the node is usable
#
# Idempotent: a second start with the daemons running only checks them (and reloads slurm.conf when
# this script's configuration changed). Needs root and Debian's slurm-wlm + munge packages (installed
# with apt-get when missing). It writes /etc/slurm/slurm.conf only when there is none or when the one
# there was written by this script (marker line below), so a real site configuration is never
# overwritten. Settings chosen for tests (environment overrides):
#   TWINSWEEP_SLURM_MAX_ARRAY  MaxArraySize (default 4: arrays of at most 4 tasks, so that the
#                              tests exercise the backend's array splitting)
#   TWINSWEEP_SLURM_CPUS       CPUs of the node (default: nproc)
#   KillWait=5                 scancel kills a task 5 s after SIGTERM (Slurm's default is 30 s)
#   partitions                 debug (default, no time limit) and short (MaxTime 10 minutes), one node
# Accounting storage is off (sacct does not work); job states come from squeue / scontrol.
set -euo pipefail

MARKER="# written by twinsweep slurm/local-cluster.sh"
CONF=/etc/slurm/slurm.conf
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
LOG_DIR=/var/log/slurm
ACTION="${1:-start}"

die() { echo "local-cluster.sh: $*" >&2; exit 1; }

alive() {  # alive PIDFILE: the process named in the pid file runs
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

node_ok() {  # the controller answers and the node is idle/mixed/allocated (not down/drained)
    local st
    st=$(timeout 10 sinfo -h -N -o %t 2>/dev/null | head -1) || return 1
    case "$st" in idle*|mix*|alloc*|comp*) return 0 ;; *) return 1 ;; esac
}

case "$ACTION" in
status)
    node_ok && exit 0
    echo "local Slurm is not usable (sinfo: $(timeout 10 sinfo -h -N -o '%N %t' 2>&1 | head -1))" >&2
    exit 1 ;;
stop)
    if alive "$CTLD_PID" || alive "$SLURMD_PID"; then
        timeout 20 scontrol shutdown >/dev/null 2>&1 || true
        for _ in $(seq 1 20); do
            alive "$CTLD_PID" || alive "$SLURMD_PID" || break
            sleep 0.5
        done
        for f in "$SLURMD_PID" "$CTLD_PID"; do  # still there: stop them by their pid files
            if alive "$f"; then kill "$(cat "$f")" 2>/dev/null || true; fi
        done
    fi
    echo "local Slurm stopped"
    exit 0 ;;
start) ;;
*) die "unknown action '$ACTION' (start | stop | status)" ;;
esac

[ "$(id -u)" = 0 ] || die "needs root (it starts munged, slurmctld and slurmd); run: sudo bash $0"

# --- packages -----------------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
        || ! command -v sinfo >/dev/null; then
    command -v apt-get >/dev/null || die "slurm-wlm and munge are missing and there is no apt-get to install them"
    echo "installing slurm-wlm and munge ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
PATH="$PATH:/usr/sbin:/sbin"

# --- munge --------------------------------------------------------------------------------------
mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
chmod 755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    su -s /bin/sh munge -c munged
    for _ in $(seq 1 20); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.25
    done
    munge -n | unmunge >/dev/null || die "munged does not answer (see /var/log/munge/munged.log)"
fi

# --- slurm.conf ---------------------------------------------------------------------------------
CPUS="${TWINSWEEP_SLURM_CPUS:-$(nproc)}"
MEM_MB=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)
MAX_ARRAY="${TWINSWEEP_SLURM_MAX_ARRAY:-4}"
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd "$LOG_DIR"
NEW_CONF=$(cat <<EOF
$MARKER
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MaxArraySize=$MAX_ARRAY
KillWait=5
MinJobAge=600
NodeName=localhost NodeHostname=localhost CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=localhost MaxTime=00:10:00 State=UP
EOF
)
changed=0
if [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
    echo "local-cluster.sh: $CONF was not written by this script; using it as it is" >&2
elif [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$NEW_CONF" ]; then
    printf '%s\n' "$NEW_CONF" > "$CONF"
    changed=1
fi

# --- daemons ------------------------------------------------------------------------------------
started=0
if ! alive "$CTLD_PID"; then
    slurmctld
    started=1
fi
if ! alive "$SLURMD_PID"; then
    slurmd
    started=1
fi
if [ "$changed" = 1 ] && [ "$started" = 0 ]; then
    scontrol reconfigure
fi

for _ in $(seq 1 60); do
    node_ok && break
    st=$(timeout 10 sinfo -h -N -o %t 2>/dev/null | head -1 || true)
    case "$st" in down*|drain*|drng*|fail*) scontrol update NodeName=localhost State=RESUME >/dev/null 2>&1 || true ;; esac
    sleep 0.5
done
if ! node_ok; then
    echo "local-cluster.sh: the local Slurm did not come up; last log lines:" >&2
    tail -n 20 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2 || true
    exit 1
fi
sinfo
