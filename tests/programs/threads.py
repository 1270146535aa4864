# tests/programs/threads.py - a threaded python3 program for det's real-program
# tests and bench/pack_sizes.py: three threads append to one list under a lock
# and hash random numbers; the output's last line is a hash of the order.
import hashlib
import random
import threading
import time

lock = threading.Lock()
order = []


def work(i):
    h = hashlib.sha256()
    for _ in range(5000):
        with lock:
            order.append(i)
        h.update(str(random.random()).encode())
    print(i, h.hexdigest()[:16], time.monotonic() > 0, flush=True)


ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("order", hashlib.sha256(repr(order).encode()).hexdigest()[:16])
