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
