"""Compile requests already answered, so that asking again costs a cache read and nothing else.

A Compile's answer is a function of the request's bytes (and this process' compiler):
the same bytes verify, lower and hash the same way. For each compiled request the
server keeps the sha256 of its bytes -> (the compile cache's key, the response's
diagnostics), at most `capacity` of them, least recently used first out. Asked again,
it answers from the cache entry under that key without a worker, verification or
lowering; when the entry is gone or damaged, the request takes the full path again.
"""

import collections
import hashlib
import threading


def digest(data):
    return hashlib.sha256(data).digest()


class Memo:
    def __init__(self, capacity=4096):
        self.capacity = capacity
        self._entries = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        """(cache key, diagnostics bytes) remembered for request digest `key`, or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key, cache_key, diagnostics):
        with self._lock:
            self._entries[key] = (cache_key, diagnostics)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def forget(self, key):
        with self._lock:
            self._entries.pop(key, None)
