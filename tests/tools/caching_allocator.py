"""A replay of PyTorch's CUDA caching allocator, to see what it reserves for a trace of
allocations and frees.

torch.cuda.max_memory_reserved() is what a fine-tuning run holds of the GPU, and it is more
than the tensors alive at the peak: the allocator keeps every block it got from cudaMalloc,
rounds requests up and splits cached blocks. This class follows the policy of
c10/cuda/CUDACachingAllocator.cpp with its default configuration (one stream, no
max_split_size, no expandable segments, no garbage collection threshold):

- a request is rounded up to a multiple of 512 bytes;
- requests of up to 1 MiB come from the small pool, larger ones from the large pool;
- the best fit is taken: the smallest cached block of the pool that is large enough, the
  lowest address among equals;
- with none, a new segment is reserved: 2 MiB for the small pool, 20 MiB for requests under
  10 MiB, else the request rounded up to 2 MiB. cudaMalloc hands out addresses top-down, so
  each new segment lies below the ones before it, and among equal blocks the newest segment's
  is taken. That order matters: replayed bottom-up, the GPU traces of eager attention at
  4k-12k tokens (whose 4 and 8 GiB score blocks get split by 64 MiB requests) came out 7-14%
  short of max_memory_reserved; top-down they match it within 0.1 GiB;
- a block larger than the request is split, the rest staying cached, when the rest is at
  least 512 bytes (small pool) or more than 1 MiB (large pool);
- a freed block merges with its free neighbours in the same segment.

With a capacity (the GPU memory left for PyTorch), a reservation that would exceed it first
gives every wholly free cached segment back (cudaFree) and retries, as the allocator does
before it reports out of memory; without one, the replay shows what the allocator reserves
when nothing forces it to give memory back.
"""

import bisect

SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
MIN_LARGE_ALLOC = 10 << 20
LARGE_BUFFER = 20 << 20
ROUND_LARGE = 2 << 20
MIN_BLOCK = 512


class Block:
    __slots__ = ("ptr", "size", "small", "free", "prev", "next")

    def __init__(self, ptr, size, small):
        self.ptr, self.size, self.small = ptr, size, small
        self.free = True
        self.prev = self.next = None


def round_size(n):
    return MIN_BLOCK if n < MIN_BLOCK else MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


def segment_size(n):
    if n <= SMALL_SIZE:
        return SMALL_BUFFER
    if n < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((n + ROUND_LARGE - 1) // ROUND_LARGE)


class CachingAllocator:
    """malloc(n) returns a handle (None when capacity, the GPU memory it may reserve, is
    short even after the cached segments are given back), free(handle) gives it back;
    reserved and allocated (the rounded sizes in use) and their peaks are kept as the real
    allocator's statistics are."""

    def __init__(self, capacity=None):
        self.capacity = capacity
        self.pools = {True: [], False: []}  # small?: sorted [(size, ptr, id, block)]
        self.next_ptr = 1 << 60
        self.reserved = self.allocated = 0
        self.peak_reserved = self.peak_allocated = 0

    def _insert(self, b):
        bisect.insort(self.pools[b.small], (b.size, b.ptr, id(b), b))

    def _remove(self, b):
        pool = self.pools[b.small]
        i = bisect.bisect_left(pool, (b.size, b.ptr, id(b)))
        assert pool[i][3] is b
        del pool[i]

    def malloc(self, n):
        size = round_size(n)
        small = size <= SMALL_SIZE
        pool = self.pools[small]
        i = bisect.bisect_left(pool, (size, -1, -1))
        if i < len(pool):
            block = pool.pop(i)[3]
        else:
            seg = segment_size(size)
            if self.capacity is not None and self.reserved + seg > self.capacity:
                # cudaMalloc failed: give every wholly free segment back and try again.
                self.release_cached()
                if self.reserved + seg > self.capacity:
                    return None
            # cudaMalloc hands out addresses top-down: each new segment lies below the last.
            self.next_ptr -= seg + ROUND_LARGE  # segments are never adjacent
            block = Block(self.next_ptr, seg, small)
            self.reserved += seg
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        rest = block.size - size
        if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
            tail = Block(block.ptr + size, rest, small)
            tail.prev, tail.next = block, block.next
            if block.next:
                block.next.prev = tail
            block.next = tail
            block.size = size
            self._insert(tail)
        block.free = False
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block

    def release_cached(self):
        """empty_cache: cudaFree every cached block that is a whole segment (unsplit)."""
        for small, pool in self.pools.items():
            kept = []
            for entry in pool:
                b = entry[3]
                if b.prev is None and b.next is None:
                    self.reserved -= b.size
                else:
                    kept.append(entry)
            self.pools[small] = kept

    def free(self, block):
        block.free = True
        self.allocated -= block.size
        for other in (block.prev, block.next):
            if other is not None and other.free:
                self._remove(other)
                if other is block.prev:
                    other.size += block.size
                    other.next = block.next
                    if block.next:
                        block.next.prev = other
                    block = other
                else:
                    block.size += other.size
                    block.next = other.next
                    if other.next:
                        other.next.prev = block
        self._insert(block)


def replay_device_trace(entries):
    """Replays what a GPU run recorded: one device's trace of torch.cuda.memory._snapshot()
    (after torch.cuda.memory._record_memory_history()), its 'alloc' and 'free_completed'
    entries matched by address. Returns the allocator, whose peak_reserved can be set against
    the run's torch.cuda.max_memory_reserved() to check this replay."""
    alloc = CachingAllocator()
    blocks = {}
    for e in entries:
        if e["action"] == "alloc":
            blocks[e["addr"]] = alloc.malloc(e["size"])
        elif e["action"] == "free_completed" and e["addr"] in blocks:
            alloc.free(blocks.pop(e["addr"]))
    return alloc


def selftest():
    """The policy's corner cases (python3 tests/tools/caching_allocator.py)."""
    a = CachingAllocator()
    small = a.malloc(100)
    assert small.size == 512 and a.reserved == SMALL_BUFFER
    mid = a.malloc(3 << 20)  # under 10 MiB: a 20 MiB segment, split
    assert a.reserved == SMALL_BUFFER + LARGE_BUFFER and mid.size == 3 << 20
    a.free(mid)  # merges back into the whole 20 MiB block
    again = a.malloc(12 << 20)  # best fit: the cached segment, split (8 MiB left)
    assert a.reserved == SMALL_BUFFER + LARGE_BUFFER and again.ptr == mid.ptr
    big = a.malloc(33 << 20)  # rounded to 34 MiB, its own segment
    assert a.reserved == SMALL_BUFFER + LARGE_BUFFER + (34 << 20)
    a.free(big)
    assert a.malloc(int(32.5 * (1 << 20))).size == int(32.5 * (1 << 20))  # 1.5 MiB left: split
    b = CachingAllocator(capacity=LARGE_BUFFER + (34 << 20))
    x = b.malloc(3 << 20)  # a 20 MiB segment
    y = b.malloc(34 << 20)  # its own 34 MiB segment: the capacity is full
    b.free(y)
    assert b.malloc(40 << 20) is None  # cached 34 MiB released, 20 MiB still in use
    b.free(x)
    assert b.malloc(40 << 20) is not None and b.reserved == 40 << 20  # both given back
    trace = [dict(action="alloc", addr=1, size=3 << 20), dict(action="alloc", addr=2, size=100),
             dict(action="free_requested", addr=1, size=3 << 20),
             dict(action="free_completed", addr=1, size=3 << 20),
             dict(action="alloc", addr=3, size=12 << 20)]
    r = replay_device_trace(trace)
    assert r.peak_reserved == LARGE_BUFFER + SMALL_BUFFER and r.allocated == (12 << 20) + 512
    c = CachingAllocator()  # equal free blocks: the newer segment's, at the lower address
    old, new = c.malloc(64 << 20), c.malloc(64 << 20)
    assert new.ptr < old.ptr
    c.free(old)
    c.free(new)
    assert c.malloc(64 << 20).ptr == new.ptr
    print("caching_allocator: ok")


if __name__ == "__main__":
    selftest()
