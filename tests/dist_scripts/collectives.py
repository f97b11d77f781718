"""Run under mpiexec (-n 2 or -n 3): every collective and op against NumPy on known inputs."""

import numpy as np

import lightgrad as lg
import lightgrad.distributed as dist
from lightgrad.distributed import ReduceOp


def inputs(n: int, dtype: str) -> list[np.ndarray]:
    """What each rank k contributes: small distinct values (exact in float16 and under products)."""
    return [(np.arange(6).reshape(2, 3) % 3 + k + 1).astype(dtype) for k in range(n)]


def expect_raises(exc: type, fn, *args, **kw) -> None:
    try:
        fn(*args, **kw)
    except exc:
        return
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


def main() -> None:
    dist.init_process_group("gloo", timeout=20)
    r, n = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    refs = {ReduceOp.SUM: np.sum, ReduceOp.AVG: np.mean, ReduceOp.PRODUCT: np.prod,
            ReduceOp.MIN: np.min, ReduceOp.MAX: np.max}

    for dtype in ("float64", "float32", "float16", "int64", "int32"):
        vals = inputs(n, dtype)
        for op, ref in refs.items():
            t = lg.tensor(vals[r])
            if op is ReduceOp.AVG and dtype.startswith("int"):
                expect_raises(RuntimeError, dist.all_reduce, t, op)
                continue
            v0 = t._version_count
            dist.all_reduce(t, op=op)
            want = ref(np.stack(vals).astype(np.float64), axis=0)
            np.testing.assert_allclose(t.numpy().astype(np.float64), want, rtol=1e-3, err_msg=f"{op} {dtype}")
            assert t.dtype == lg.tensor(vals[r]).dtype and t._version_count == v0 + 1

    # integers: bitwise ops
    ints = [np.array([1 << k, 3, 5 + k], np.int64) for k in range(n)]
    for op, ref in {ReduceOp.BAND: np.bitwise_and, ReduceOp.BOR: np.bitwise_or, ReduceOp.BXOR: np.bitwise_xor}.items():
        t = lg.tensor(ints[r])
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(t.numpy(), ref.reduce(np.stack(ints), axis=0))

    # bools: sum/max are "any", product/min are "all"
    bools = [np.array([k == 0, True, False, k == 1]) for k in range(n)]
    for op, ref in {ReduceOp.SUM: np.any, ReduceOp.MAX: np.any, ReduceOp.PRODUCT: np.all, ReduceOp.MIN: np.all}.items():
        t = lg.tensor(bools[r])
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(t.numpy(), ref(np.stack(bools), axis=0))

    # a non-contiguous tensor is reduced in place through a temporary
    base = lg.tensor(inputs(n, "float64")[r].T.copy())
    view = base.T
    dist.all_reduce(view)
    np.testing.assert_allclose(base.numpy(), np.sum(inputs(n, "float64"), axis=0).T)

    # broadcast from every source
    for src in range(n):
        t = lg.tensor(inputs(n, "float32")[r])
        dist.broadcast(t, src=src)
        np.testing.assert_array_equal(t.numpy(), inputs(n, "float32")[src])

    # all_gather into a list, and into one tensor (concatenated and stacked layouts)
    vals = inputs(n, "float64")
    outs = [lg.zeros(2, 3, dtype=lg.float64) for _ in range(n)]
    dist.all_gather(outs, lg.tensor(vals[r]))
    for k in range(n):
        np.testing.assert_array_equal(outs[k].numpy(), vals[k])
    cat = lg.zeros(2 * n, 3, dtype=lg.float64)
    dist.all_gather_into_tensor(cat, lg.tensor(vals[r]))
    np.testing.assert_array_equal(cat.numpy(), np.concatenate(vals))
    stacked = lg.zeros(n, 2, 3, dtype=lg.float64)
    dist.all_gather_into_tensor(stacked, lg.tensor(vals[r]))
    np.testing.assert_array_equal(stacked.numpy(), np.stack(vals))

    # reduce_scatter: rank k sends chunk j = vals[k] + 10 j; rank r receives sum_k chunk r
    for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX):
        chunks = [lg.tensor(vals[r] + 10 * j) for j in range(n)]
        out = lg.zeros(2, 3, dtype=lg.float64)
        dist.reduce_scatter(out, chunks, op=op)
        want = refs[op](np.stack([vals[k] + 10 * r for k in range(n)]), axis=0)
        np.testing.assert_allclose(out.numpy(), want)
        out = lg.zeros(2, 3, dtype=lg.float64)
        dist.reduce_scatter_tensor(out, lg.cat(chunks), op=op)
        np.testing.assert_allclose(out.numpy(), want)

    # reduce into one rank; the others keep their input
    for dst in range(n):
        for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MIN):
            t = lg.tensor(vals[r])
            dist.reduce(t, dst=dst, op=op)
            np.testing.assert_allclose(t.numpy(), refs[op](np.stack(vals), axis=0) if r == dst else vals[r])

    # Python objects
    objs = [{"rank": r, "name": f"r{r}"}, [r] * (r + 1)]
    dist.broadcast_object_list(objs, src=n - 1)
    assert objs == [{"rank": n - 1, "name": f"r{n - 1}"}, [n - 1] * n], objs
    everyone = [None] * n
    dist.all_gather_object(everyone, ("x" * (r * 1000), r))  # different sizes per rank
    assert everyone == [("x" * (k * 1000), k) for k in range(n)]

    # async work objects
    t = lg.tensor(vals[r])
    work = dist.all_reduce(t, group=dist.group.WORLD, async_op=True)
    assert work.wait() and work.is_completed()
    np.testing.assert_allclose(t.numpy(), np.sum(vals, axis=0))
    base = lg.tensor(vals[r].T.copy())
    work = dist.all_reduce(base.T, op=ReduceOp.AVG, async_op=True)  # through a temporary, then divided
    while not work.is_completed():
        pass
    np.testing.assert_allclose(base.numpy(), np.mean(vals, axis=0).T)
    dist.barrier()
    dist.barrier(async_op=True).wait()

    # bad arguments raise before anything is sent (on every rank alike)
    expect_raises(ValueError, dist.broadcast, lg.zeros(2), n)
    expect_raises(ValueError, dist.all_gather, [lg.zeros(2)] * (n + 1), lg.zeros(2))
    expect_raises(ValueError, dist.all_gather, [lg.zeros(3)] * n, lg.zeros(2))
    expect_raises(ValueError, dist.all_gather_into_tensor, lg.zeros(n * 2 + 1), lg.zeros(2))
    expect_raises(ValueError, dist.reduce_scatter_tensor, lg.zeros(2), lg.zeros(2 * n + 1))
    expect_raises(TypeError, dist.all_reduce, np.zeros(2))
    expect_raises(TypeError, dist.all_reduce, lg.zeros(2), "sum")
    expect_raises(RuntimeError, dist.all_reduce, lg.zeros(2).expand(3, 2))
    expect_raises(RuntimeError, dist.all_reduce, lg.ones(2, dtype=lg.float32), ReduceOp.BAND)
    expect_raises(ValueError, dist.reduce, lg.zeros(2), -1)
    expect_raises(ValueError, dist.all_gather_object, [None] * (n + 1), 1)
    expect_raises(ValueError, dist.init_process_group, "mpi")
    dist.barrier()  # still in step after all that
    dist.destroy_process_group()
    assert not dist.is_initialized()
    expect_raises(ValueError, dist.get_rank)
    print(f"OK rank {r} of {n}", flush=True)


if __name__ == "__main__":
    main()
