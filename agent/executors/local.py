"""The local executor: CPU work in spawned worker processes, one measurement worker per GPU.

Each CPU slot is a runtime/pool.py WorkerPool of one process (the compiler in-process
there, so verification runs on every core instead of in one service's GIL), driven by
a thread of the driver; each measurement slot is an evaluator whose own pool worker is
pinned to one GPU (CUDA_VISIBLE_DEVICES), as on one GPU. A worker that dies or hangs
is replaced by its pool, and the job it held is run again (at most MAX_TRIES times in
all, then it is reported failed); a job whose code raised is reported failed at once.
No new dependency: threads, queues and the worker pool the runtime already has.
"""

import os
import pickle
import queue
import shutil
import tempfile
import threading
import time

from agent.executors import work
from agent.executors.base import Executor, Failed
from runtime import failures
from runtime.pool import Job, WorkerPool, WorkerStartError

TIME_LIMIT_S = {"warm": 300.0, "propose": 300.0, "check": 600.0, "compile": 900.0}
MAX_TRIES = 3
RETRY_PAUSE_S = 1.0


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, config, cpu_workers, measurer=None, gpus=0, binding=None, results_path=None):
        super().__init__(cpu_workers, gpus if measurer is not None else 0)
        self._dir = tempfile.mkdtemp(prefix="cake-exec-")
        self._config_path = os.path.join(self._dir, "config.pickle")
        with open(self._config_path, "wb") as f:
            pickle.dump(config, f)
        self._cpu, self._gpu, self._results = queue.Queue(), queue.Queue(), queue.Queue()
        self._stopping = threading.Event()
        # CPU workers hold no device state to shed, and a restart costs seconds of imports: never recycled
        # (every 200 jobs, a long run spent most of its time starting workers).
        self._pools = [WorkerPool(max_jobs_per_worker=None) for _ in range(cpu_workers)]
        self._threads = [threading.Thread(target=self._cpu_slot, args=(i, pool), daemon=True, name="cake-cpu-%d" % i)
                         for i, pool in enumerate(self._pools)]
        self._evaluators = []
        for i in range(self.gpu_slots):
            evaluator = measurer.evaluator(device=i, results_path=results_path)
            self._evaluators.append(evaluator)
            self._threads.append(threading.Thread(target=self._gpu_slot, args=(evaluator, binding), daemon=True,
                                                  name="cake-gpu-%d" % i))
        for t in self._threads:
            t.start()

    def _send(self, ticket, kind, payload):
        (self._gpu if kind == "measure" else self._cpu).put((ticket, kind, payload, 1))

    def _cpu_slot(self, slot, pool):
        # Start the worker and build its Context while the driver sets the run up: otherwise the first jobs
        # wait for process starts one after another (the seed's check, its compile, its measurement).
        # A worker that cannot start is reported by the first job it was meant for.
        try:
            pool.run(Job(task="agent.executors.work:warm", payload={"config": self._config_path}, ir_hash="",
                         time_limit_s=TIME_LIMIT_S["warm"], label="warm"))
        except WorkerStartError:
            pass
        while True:
            item = self._cpu.get()
            if item is None or self._stopping.is_set():
                return
            ticket, kind, payload, tries = item
            job = Job(task="agent.executors.work:run_in_process", ir_hash=payload.get("ir_hash", ""),
                      payload={"config": self._config_path, "kind": kind, "job": self.known.attach(slot, payload)},
                      time_limit_s=TIME_LIMIT_S[kind], label=kind)
            try:
                record = pool.run(job)
            except WorkerStartError as e:
                record = {"ok": False, "failure": {"kind": failures.CRASH, "message": str(e)}}
            if self._stopping.is_set():
                return
            if not record["ok"] or record.get("worker_replaced"):
                self.known.lost(slot)  # its copy of the known log may be gone with it: send it all again
            if record["ok"]:
                self.known.replied(slot, record["result"])
                self._results.put((ticket, record["result"]))
            elif record["failure"]["kind"] in (failures.CRASH, failures.TIMEOUT) and tries < MAX_TRIES:
                time.sleep(RETRY_PAUSE_S)  # a lost worker: the job goes back in line
                self._cpu.put((ticket, kind, payload, tries + 1))
            else:
                f = record["failure"]
                self._results.put((ticket, Failed(f["kind"], f["message"])))

    def _gpu_slot(self, evaluator, binding):
        try:
            evaluator.warm()  # the measurement worker's start (CUDA) before the first candidate is built
        except WorkerStartError:
            pass  # the first measurement reports it
        while True:
            item = self._gpu.get()
            if item is None or self._stopping.is_set():
                return
            ticket, kind, payload, tries = item
            try:
                result = work.measure(evaluator, binding, payload)
            except Exception as e:  # the slot itself broke (its pool's worker could not start): try again
                if tries < MAX_TRIES and not self._stopping.is_set():
                    time.sleep(RETRY_PAUSE_S)
                    self._gpu.put((ticket, kind, payload, tries + 1))
                    continue
                result = Failed(failures.CRASH, "%s: %s" % (type(e).__name__, e))
            self._results.put((ticket, result))

    def _receive(self, timeout):
        out = []
        try:
            out.append(self._results.get(timeout=timeout))
            while True:
                out.append(self._results.get_nowait())
        except queue.Empty:
            pass
        return out

    def close(self):
        self._stopping.set()
        for _ in self._pools:
            self._cpu.put(None)
        for _ in self._evaluators:
            self._gpu.put(None)
        for pool in self._pools:
            pool.terminate()  # a job in flight is abandoned: the run stopped, or the driver is leaving
        for t in self._threads:
            t.join(timeout=60)
        for pool in self._pools:
            pool.close()
        for evaluator in self._evaluators:
            evaluator.close()
        shutil.rmtree(self._dir, ignore_errors=True)
