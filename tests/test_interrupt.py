"""Ctrl-C and SIGTERM end ``costlab run`` while its main thread is blocked in TVM (a hung measurement)."""

import signal
import subprocess
import sys
import time

import pytest

BLOCKED_MAIN_THREAD = """
import os, signal, sys, threading, time
from costlab import experiment

threading.Thread(target=lambda: time.sleep(300), daemon=True).start()  # started before the mask, as MLflow's telemetry

def on_interrupt(signum, frame):
    sys.stdout.write(f"ended by {signum}\\n")
    sys.stdout.flush()
    os._exit(7)

signal.signal(signal.SIGTERM, on_interrupt)
signal.signal(signal.SIGINT, on_interrupt)
experiment._wait_for_interrupt_in_a_thread(on_interrupt)
print("blocked", flush=True)
os.read(os.pipe()[0], 1)  # the main thread waits in C and runs no Python handler, as in a hung RPC measurement
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_taken_by_a_thread_started_earlier_ends_a_run_whose_main_thread_is_blocked(sig):
    """The kernel gives a process's signal to a thread that does not block it: one started before
    the run blocked them (MLflow's telemetry). Python runs handlers only in the main thread, which
    waited in TVM, so Ctrl-C did nothing until the hung measurement returned (found by a farm audit:
    minutes, with a frozen RPC server)."""
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED_MAIN_THREAD], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "blocked"
        time.sleep(0.5)  # the waiting thread is up
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 7 and out.strip() == f"ended by {int(sig)}"


ENDS_ONLY_ITS_WORKERS = """
import signal, subprocess, sys
from costlab import experiment

users = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # a notebook's or script's own process, started before the run
handler = experiment._exit_on_interrupt(lambda: None, spare=experiment._child_pids())
workers = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL)  # started by the run (a builder worker, say)
print(users.pid, workers.pid, flush=True)
handler(signal.SIGINT, None)
"""


def test_ctrl_c_ends_the_workers_the_run_started_and_spares_the_callers_own_processes():
    """run_experiment called from Python: Ctrl-C killed every descendant of the process, the
    caller's own child processes too (found by a library-API audit)."""
    import psutil

    proc = subprocess.run([sys.executable, "-c", ENDS_ONLY_ITS_WORKERS], capture_output=True, text=True, timeout=60)
    users, workers = map(int, proc.stdout.split())
    try:
        assert proc.returncode == 130 and "interrupted: every measured record is in the tuning databases" in proc.stderr
        assert psutil.pid_exists(users) and psutil.Process(users).status() != psutil.STATUS_ZOMBIE
        assert not psutil.pid_exists(workers) or psutil.Process(workers).status() == psutil.STATUS_ZOMBIE
    finally:
        for pid in (users, workers):
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
