#!/usr/bin/env bash
# A real single-node SLURM cluster for tests/test_slurm.py: Debian 12 packages (slurm 22.05),
# no systemd, run as root on a throwaway machine (CI runner, container). Never on a real cluster.
#
# Usage: tests/slurm/slurm-local.sh start|stop|status
#   WITH_DBD=0 (default)  no accounting: the profile's squeue status check is what is tested;
#                         finished jobs are recorded by jobcomp/filetxt in $LOG/jobcomp.log
#   WITH_DBD=1            adds slurmdbd + MariaDB so that sacct works as well
#
# Adapted from /work/shared/tools/slurm-local.sh (a general starting point). Kept: the
# package list, munge setup, the slurm.conf core and the slurmdbd/MariaDB part. Changed,
# and why:
#   - accounting off by default: profiles/slurm polls with squeue, which only needs
#     slurmctld; the plugin's sacct default would hang silently without slurmdbd.
#   - MinJobAge=600: squeue shows a finished job only for MinJobAge seconds. The plugin
#     polls at most every 180 s and falls back to sacct when MinJobAge < 3 x
#     slurm-init-seconds-before-status-checks, so it has to be comfortably above both.
#   - JobCompType=jobcomp/filetxt: one line per finished job (state, exit code, partition,
#     time limit, TRES, start/end, workdir) with no database: the test's proof that the
#     jobs really ran under SLURM when sacct is not available.
#   - idempotent: packages installed only when missing, daemons started only when not
#     already running; `stop` ends only the daemons whose pid files this script set up.
#   - `status` subcommand (exit 0 when the node is idle/allocated and accepts jobs).
set -euo pipefail
WITH_DBD=${WITH_DBD:-0}
DB_DIR=${DB_DIR:-/var/spool/slurm-mysql}
LOG=${SLURM_LOCAL_LOG:-/var/log/slurm}

running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  [ "$(id -u)" = 0 ] || { echo "slurm-local.sh: must run as root" >&2; exit 2; }
  export DEBIAN_FRONTEND=noninteractive
  pkgs="munge slurmctld slurmd slurm-client"
  [ "$WITH_DBD" = 1 ] && pkgs="$pkgs slurmdbd mariadb-server-core mariadb-client-core"
  missing=""
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi

  # munge: postinst normally creates the key; make sure anyway
  [ -s /etc/munge/munge.key ] || mungekey -c -f -k /etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
  install -d -o munge -g munge -m 755 /run/munge      # no systemd-tmpfiles here
  running /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged
  munge -n | unmunge >/dev/null

  host=$(hostname -s)
  mem=$(( $(free -m | awk '/^Mem:/{print $2}') - 1024 ))
  cpus=$(nproc)
  mkdir -p /var/spool/slurmctld /var/spool/slurmd "$LOG"
  if [ "$WITH_DBD" = 1 ]; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819"
  else
    acct="AccountingStorageType=accounting_storage/none"
  fi
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ci
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/var/spool/slurmctld/slurmctld.pid
SlurmdPidFile=/var/spool/slurmd/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
# no cgroups in a container: plain process tracking, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
$acct
# a record of every finished job that needs no database (read by tests/test_slurm.py)
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.log
# finished jobs stay visible to squeue this long (profiles/slurm polls with squeue)
MinJobAge=600
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

  if [ "$WITH_DBD" = 1 ]; then
    if [ ! -d "$DB_DIR/mysql" ]; then
      mariadb-install-db --no-defaults --datadir="$DB_DIR" --user=root \
        --auth-root-authentication-method=normal --skip-test-db >/dev/null
    fi
    if ! running "$DB_DIR/mysqld.pid"; then
      # --skip-grant-tables: no users/passwords needed; loopback only
      setsid mariadbd --no-defaults --datadir="$DB_DIR" --user=root \
        --socket="$DB_DIR/mysqld.sock" --pid-file="$DB_DIR/mysqld.pid" \
        --bind-address=127.0.0.1 --port=3306 --skip-grant-tables \
        --log-error="$DB_DIR/mysqld.err" </dev/null >/dev/null 2>&1 &
      for i in $(seq 120); do [ -S "$DB_DIR/mysqld.sock" ] && break; sleep 0.25; done
    fi
    cat > /etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
LogFile=$LOG/slurmdbd.log
PidFile=/var/spool/slurmctld/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=root
StoragePass=unused
StorageLoc=slurm_acct_db
CONF
    chmod 600 /etc/slurm/slurmdbd.conf        # slurmdbd refuses a world-readable file
    running /var/spool/slurmctld/slurmdbd.pid || slurmdbd
    for i in $(seq 120); do (echo > /dev/tcp/127.0.0.1/6819) 2>/dev/null && break; sleep 0.25; done
  fi

  # slurmctld registers cluster "ci" in slurmdbd by itself; one still running from an
  # earlier start re-reads the slurm.conf written above
  if running /var/spool/slurmctld/slurmctld.pid; then scontrol reconfigure; else slurmctld; fi
  running /var/spool/slurmd/slurmd.pid || slurmd
  for i in $(seq 120); do status >/dev/null 2>&1 && break; sleep 0.25; done
  sinfo
  status
}

status() {
  sinfo -h -o %T 2>/dev/null | grep -Eqx 'idle|mixed|allocated'
}

stop() {
  for p in /var/spool/slurmd/slurmd.pid /var/spool/slurmctld/slurmctld.pid \
           /var/spool/slurmctld/slurmdbd.pid "$DB_DIR/mysqld.pid" /run/munge/munged.pid; do
    [ -s "$p" ] || continue
    pid=$(cat "$p"); kill "$pid" 2>/dev/null || true
    for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  done
}

"${1:-start}"
