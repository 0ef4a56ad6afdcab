"""loom.torch.StorageWriter / StorageReader: torch.distributed.checkpoint
(torch 1.13: torch.distributed._shard.checkpoint) on libloom's checkpoint.

Each save is one step of libloom's checkpoint under the writer's
directory (docs/checkpoint-format.md), so it gets what loom_ckpt(3)
gives: two-phase I/O, the node-local tier with partner copies
(LOOM_CKPT_CACHE), async save with `latest` moved once the data is
durable, per-chunk checksums, and a restore that falls back to an older
step with a warning when the newest is damaged.

Mapping: every tensor of the state dict is one libloom tensor "tN" of
int8 with shape (*size, itemsize) (so any dtype, and libloom reshards it
by its leading dimensions: each rank saves its chunks, whatever their
layout, and a load on any rank count reads the regions it asks for);
every non-tensor value (torch.save'd by the planner) is one int8 tensor
"bN" held by the rank that wrote it; DCP's Metadata and this table are
pickled into "meta" (and its length into "meta_len") by the coordinator,
inside the same step, so a step is complete or absent as a whole.

The libloom calls are collective over a loom.World (default: one made
beside torch's process group, loom.torch.cpu_world()), so every rank
calls save_state_dict/load_state_dict, as DCP requires anyway.
"""
import atexit
import copy
import dataclasses
import os
import pickle
import sys
from typing import Any, Dict, List, Optional, Tuple

from ._ckpt import Checkpoint
from ._errors import IOFailure, invalid
from ._world import World

_DCP: Any = None


def dcp() -> Any:
    """torch.distributed.checkpoint (torch >= 2.0) or 1.13's
    torch.distributed._shard.checkpoint. Under Python >= 3.11, 1.13's
    sharded_tensor metadata does not import (a dataclass field whose
    default is a TensorProperties instance, which 3.11 rejects as a
    mutable default): while it is imported, such defaults become
    default_factory copies, which is what later torch releases do."""
    global _DCP
    if _DCP is not None:
        return _DCP
    import torch
    major = int(torch.__version__.split(".")[0])
    if major >= 2:
        import torch.distributed.checkpoint as m
        _DCP = m
        return m
    orig = dataclasses._get_field     # type: ignore[attr-defined]

    def get_field(cls: Any, name: str, type_: Any, kw_only: Any) -> Any:
        d = cls.__dict__.get(name, dataclasses.MISSING)
        v = d.default if isinstance(d, dataclasses.Field) else d
        if v is not dataclasses.MISSING and dataclasses.is_dataclass(v) and \
                type(v).__hash__ is None:
            setattr(cls, name, dataclasses.field(default_factory=lambda v=v: copy.deepcopy(v)))
        return orig(cls, name, type_, kw_only)

    dataclasses._get_field = get_field  # type: ignore[attr-defined]
    try:
        import torch.distributed._shard.checkpoint as m
    finally:
        dataclasses._get_field = orig   # type: ignore[attr-defined]
    _DCP = m
    return m


class _Shared:
    """One libloom checkpoint handle of a directory and a world, shared
    by every writer of that pair (and its staging memory with it)."""

    def __init__(self, world: World, ck: Checkpoint) -> None:
        self.world = world
        self.ck = ck
        self.next_step: Optional[int] = None    # the step after the last save


# Writers and readers made without world= share one world, made at the
# first that needs it; writers of one directory and world share one
# handle (_Shared), so that a writer made per save (README's
# save_state_dict(sd, StorageWriter(path))) neither forms a world nor
# faults in staging at each save. A writer's close() closes the shared
# handle (the next save opens another); what is left open is closed at
# interpreter exit, the handles first (an async save in flight becomes
# durable), then the world. Every rank makes the same calls, so the
# cache and these collective opens and closes match on every rank.
_DEFAULT: List[World] = []
_SHARED: Dict[Tuple[str, int], _Shared] = {}
_COUNTS = {"worlds": 0, "handles": 0}       # made so far (the tests read them)
_AT_EXIT: List[bool] = []


def _at_exit() -> None:
    if not _AT_EXIT:
        atexit.register(_close_all)
        _AT_EXIT.append(True)


def _close_all() -> None:
    """Close every shared handle whose world is open, then the default world."""
    for key in list(_SHARED):
        _drop(key)
    while _DEFAULT:
        w = _DEFAULT.pop()
        if w._comm:
            try:
                w.close()
            except Exception as e:  # noqa: BLE001 (at exit: say it, go on)
                sys.stderr.write("loom: warning: closing the DCP world at exit: %s\n" % e)


def _drop(key: Tuple[str, int]) -> None:
    """Close the shared handle of key (collective) and forget it."""
    sh = _SHARED.pop(key, None)
    if sh is not None and sh.world._comm:
        try:
            sh.ck.close()
        except Exception as e:  # noqa: BLE001
            sys.stderr.write("loom: warning: closing the DCP checkpoint %s: %s\n" %
                             (sh.ck.dir, e))


def _world(world: Optional[World]) -> World:
    """world, else the shared default world (made now when there is none
    open: collective)."""
    if world is not None:
        return world
    if _DEFAULT and _DEFAULT[0]._comm:
        return _DEFAULT[0]
    from ._resumable import cpu_world
    _DEFAULT[:] = [cpu_world()]
    _COUNTS["worlds"] += 1
    _at_exit()
    return _DEFAULT[0]


def _key(path: str, world: World) -> Tuple[str, int]:
    return (os.path.realpath(path), id(world))


def _shared(path: str, world: World) -> _Shared:
    """The shared handle of path and world, opened now when there is none
    (collective)."""
    key = _key(path, world)
    sh = _SHARED.get(key)
    if sh is not None and sh.world is world and sh.ck._ck:
        return sh
    _SHARED.pop(key, None)  # its world was closed, or another took its id
    sh = _Shared(world, Checkpoint(world, path))
    _SHARED[key] = sh
    _COUNTS["handles"] += 1
    _at_exit()
    return sh


def _settle(path: str, world: World) -> None:
    """Wait for the writers' async save in flight in path, if any, so that a
    reader finds it committed (collective when there is one)."""
    sh = _SHARED.get(_key(path, world))
    if sh is not None and sh.world is world and sh.ck._ck:
        sh.ck.wait()


def _bytes_of(t: Any) -> Any:
    """A CPU tensor's elements as a writable int8 numpy array of shape
    (*t.shape, itemsize) (a copy when t is not already such a tensor)."""
    import torch
    t = t.detach().to("cpu").contiguous()
    n = t.element_size()
    b = t.reshape(-1).view(torch.int8) if t.dtype != torch.int8 else t.reshape(-1).clone()
    return b.numpy().reshape(tuple(t.shape) + (n,))


def _dtype_of(name: str) -> Any:
    import torch
    return getattr(torch, name.split(".", 1)[1])


def _share_bytes(state_dict: Any, rank: int) -> int:
    """The bytes of state_dict's tensors this rank saves: its local shards
    of sharded (and DTensor) tensors, and every plain tensor on rank 0
    (the coordinator, which DCP's default planner has save them)."""
    import torch
    n = 0
    todo = [state_dict]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
        elif hasattr(v, "local_shards"):
            n += sum(sh.tensor.numel() * sh.tensor.element_size() for sh in v.local_shards())
        elif hasattr(v, "to_local"):
            t = v.to_local()
            n += t.numel() * t.element_size()
        elif isinstance(v, torch.Tensor) and rank == 0:
            n += v.numel() * v.element_size()
    return n


def _default_path(path: Optional[str], who: str) -> str:
    """path, or LOOM_CKPT_DIR/dcp (loom.so's --loom-ckpt) when it is None"""
    if path is not None:
        return path
    if not os.environ.get("LOOM_CKPT_DIR"):
        raise invalid("%s: no path and LOOM_CKPT_DIR is unset" % who)
    return os.path.join(os.environ["LOOM_CKPT_DIR"], "dcp")


class StorageWriter:
    """DCP StorageWriter on libloom's checkpoint (see the module):

        w = loom.torch.StorageWriter(path)          # path: default $LOOM_CKPT_DIR/dcp
        dcp.save_state_dict(state_dict, w)          # every rank
        w.close()                                   # waits for an async save

    step: the libloom step of the next save (default: one after the
    newest committed step, 0 when none; counted on from there). async_save:
    save_state_dict returns once the data is copied to staging memory
    (loom_ckpt_set_async), and the step becomes `latest` only once it is
    durable; the next save or close() waits for it. keep: committed steps
    kept (default 2). world: the loom.World of the ranks (collective).

    One libloom checkpoint handle serves every save of a writer (its
    tensors registered afresh at each save, loom_ckpt_clear), so an async
    save copies into staging memory faulted in once, not at every save;
    writers of the same directory and world share it, so a writer made
    per save, save_state_dict(sd, StorageWriter(path)), reuses it too
    (and, without world=, one world made at the first save).
    The first async save would still fault it in during its copy, unless
    the writer knows the state beforehand: state_dict (the state, or one
    of the same sizes) makes the constructor collective, opens the handle
    and starts faulting this rank's share in, in the background, while
    the program goes on (loom_ckpt_reserve); reserve() does the same
    later, with the share in bytes. The staging (this rank's share) is held
    until close(), else until the interpreter exits (which waits for the
    async save in flight).
    """

    def __init__(self, path: Optional[str] = None, step: Optional[int] = None,
                 async_save: bool = False, keep: int = 2, world: Optional[World] = None,
                 state_dict: Any = None) -> None:
        self.path = _default_path(path, "StorageWriter")
        self.step = step
        self.async_save = bool(async_save)
        self.keep = keep
        self._world_arg = world
        self.world: Optional[World] = None
        self.is_coordinator = False
        self.saved: Optional[int] = None          # the step of the last save
        if state_dict is not None:
            self._open()
            assert self.world is not None
            self.reserve(_share_bytes(state_dict, self.world.rank))

    def reserve(self, nbytes: int) -> None:
        """With async_save: fault in staging memory for a share of nbytes
        bytes (this rank's tensors) now, in the background, so that the
        first async save blocks only for its copy. Collective the first
        time (it opens the handle); nothing without async_save."""
        ck = self._open().ck
        if self.async_save:
            # with room for DCP's metadata and the non-tensor values
            ck.reserve(int(nbytes) + max(1 << 20, int(nbytes) // 64))

    # torch 2.x names
    def reset(self, checkpoint_id: Any = None) -> None:
        pass

    def set_up_storage_writer(self, is_coordinator: bool) -> None:
        self.init(is_coordinator)

    def init(self, is_coordinator: bool) -> None:
        self.is_coordinator = is_coordinator
        self._open()

    @property
    def _ck(self) -> Optional[Checkpoint]:
        """The handle shared with the other writers of path and world, None
        before the first save and after close()."""
        if self.world is None:
            return None
        sh = _SHARED.get(_key(self.path, self.world))
        return sh.ck if sh is not None and sh.world is self.world and sh.ck._ck else None

    def _open(self) -> _Shared:
        """The shared handle, with this writer's settings (collective when
        it is opened)."""
        if self.world is None or not self.world._comm:
            self.world = _world(self._world_arg)
            if self.world.rank == 0:
                os.makedirs(self.path, exist_ok=True)
            self.world.barrier()
        sh = _shared(self.path, self.world)
        try:
            sh.ck.set_keep(self.keep)
            sh.ck.set_async(self.async_save)
        except BaseException:
            _drop(_key(self.path, self.world))
            raise
        return sh

    def prepare_local_plan(self, plan: Any) -> Any:
        return plan

    def prepare_global_plan(self, plans: List[Any]) -> List[Any]:
        """On the coordinator: the table of libloom tensors every rank
        declares (same order), and DCP's metadata, pickled."""
        m = dcp()
        WriteItemType = m.planner.WriteItemType
        _, md = m.default_planner.create_default_global_save_plan(plans)
        tensors: Dict[str, Tuple[str, str, Tuple[int, ...], int]] = {}
        blobs: Dict[str, Tuple[str, int]] = {}
        for r, plan in enumerate(plans):
            for it in plan.items:
                fqn = it.index.fqn
                if it.type == WriteItemType.BYTE_IO:
                    blobs[fqn] = ("b%d" % len(blobs), r)
                elif fqn not in tensors:
                    td = it.tensor_data
                    itemsize = _element_size(td.properties.dtype)
                    tensors[fqn] = ("t%d" % len(tensors), str(td.properties.dtype),
                                    tuple(td.size), itemsize)
        table = {"tensors": tensors, "blobs": blobs}
        blob = pickle.dumps({"metadata": md, "table": table})
        out = []
        for r, plan in enumerate(plans):
            data = {"table": table, "meta_len": len(blob),
                    "meta": blob if r == 0 else None}
            out.append(dataclasses.replace(plan, storage_data=data))
        return out

    def write_data(self, plan: Any, planner: Any) -> Any:
        from torch.futures import Future
        import numpy
        m = dcp()
        WriteItemType = m.planner.WriteItemType
        world = self.world
        assert world is not None
        info = plan.storage_data
        table = info["table"]
        mine: Dict[str, List[Tuple[Any, Any]]] = {}
        blobs: Dict[str, Any] = {}
        results = []
        for it in plan.items:
            data = planner.resolve_data(it)
            fqn = it.index.fqn
            if it.type == WriteItemType.BYTE_IO:
                raw = data.getvalue()
                blobs[fqn] = numpy.frombuffer(bytearray(raw), dtype=numpy.int8)
                results.append(m.storage.WriteResult(index=it.index, size_in_bytes=len(raw),
                                                     storage_data=None))
            else:
                b = _bytes_of(data)
                mine.setdefault(fqn, []).append((it.tensor_data.chunk.offsets, b))
                results.append(m.storage.WriteResult(index=it.index, size_in_bytes=b.nbytes,
                                                     storage_data=None))
        # the blobs' lengths, known only to their writers: one allreduce
        names = sorted(table["blobs"], key=lambda f: int(table["blobs"][f][0][1:]))
        lens = numpy.zeros(max(1, len(names)), dtype=numpy.int64)
        for i, fqn in enumerate(names):
            if fqn in blobs:
                lens[i] = len(blobs[fqn])
        world.allreduce(lens, op="sum")
        sh = self._open()
        ck = sh.ck
        try:
            ck.clear()
            self._register(ck, info, names, mine, blobs, lens)
            step = self.step if self.step is not None else sh.next_step
            if step is None:
                last = ck.latest()
                step = 0 if last is None else last + 1
            ck.save(step)
        except BaseException:
            _drop(_key(self.path, world))
            raise
        ck.clear()  # the state's buffers are not kept (an async save has its copy)
        self.saved = step
        self.step = sh.next_step = step + 1
        fut: Any = Future()
        fut.set_result(results)
        return fut

    @staticmethod
    def _register(ck: Checkpoint, info: Dict[str, Any], names: List[str],
                  mine: Dict[str, List[Tuple[Any, Any]]], blobs: Dict[str, Any],
                  lens: Any) -> None:
        """Every rank's table in the same order: head, meta, blob_lens (the
        coordinator's), then the tensors and the blobs."""
        import numpy
        table = info["table"]
        head = numpy.array([info["meta_len"], len(names)], dtype=numpy.int64)
        if info["meta"] is not None:
            ck.tensor("head", head)
            ck.tensor("meta", numpy.frombuffer(bytearray(info["meta"]), dtype=numpy.int8))
            ck.tensor("blob_lens", lens)
        else:
            ck.declare("head", "int64", [2])
            ck.declare("meta", "int8", [info["meta_len"]])
            ck.declare("blob_lens", "int64", [len(lens)])
        for fqn, (lname, _dt, size, itemsize) in table["tensors"].items():
            gshape = list(size) + [itemsize]
            if len(gshape) > 8:
                raise invalid("StorageWriter: %s has %d dimensions; at most 7" %
                              (fqn, len(size)))
            blocks = mine.get(fqn, [])
            if not blocks:
                ck.declare(lname, "int8", gshape)
            for offsets, b in blocks:
                ck.tensor(lname, b, global_shape=gshape, offset=list(offsets) + [0])
        for i, fqn in enumerate(names):
            lname = table["blobs"][fqn][0]
            if fqn in blobs and len(blobs[fqn]):
                ck.tensor(lname, blobs[fqn])
            else:
                ck.declare(lname, "int8", [max(1, int(lens[i]))])

    def finish(self, metadata: Any, results: Any) -> None:
        pass

    def wait(self) -> None:
        """Wait until the async save in flight is durable (collective)."""
        ck = self._ck
        if ck is not None:
            ck.wait()

    def close(self) -> None:
        """wait(), then close the handle this writer shares with the other
        writers of its directory and world, freeing the staging (collective;
        their next save opens another). The world made without world= stays,
        for the next writer or reader, until the interpreter exits."""
        if self.world is not None:
            _drop(_key(self.path, self.world))
        self.world = None


def _element_size(dtype: Any) -> int:
    import torch
    return torch.empty((), dtype=dtype).element_size()


class StorageReader:
    """DCP StorageReader on libloom's checkpoint (see the module):

        r = loom.torch.StorageReader(path)          # default $LOOM_CKPT_DIR/dcp
        dcp.load_state_dict(state_dict, r)          # every rank, any rank count
        r.step                                      # the step loaded

    step: load that step (default: the newest that verifies; a damaged
    one falls back to the one before, with a warning). world: the
    loom.World of the ranks (collective); without it, readers and writers
    share one world. A load waits for the async save in flight of the
    writers of path (and world), so it finds that save committed.
    """

    def __init__(self, path: Optional[str] = None, step: Optional[int] = None,
                 world: Optional[World] = None) -> None:
        self.path = _default_path(path, "StorageReader")
        self.step = step
        self._world_arg = world
        self.world: Optional[World] = None
        self._table: Dict[str, Any] = {}
        self._lens: List[int] = []
        self._tried: List[int] = []

    def reset(self, checkpoint_id: Any = None) -> None:
        pass

    def set_up_storage_reader(self, metadata: Any, is_coordinator: bool) -> None:
        self.init(metadata, is_coordinator)

    def _meta(self, step: Optional[int]) -> Tuple[int, Dict[str, Any]]:
        """Load meta of step (None: the newest whose meta verifies)."""
        import numpy
        world = self.world
        assert world is not None
        n = numpy.zeros(2, dtype=numpy.int64)     # meta's length, the blobs' count
        with Checkpoint(world, self.path) as ck:
            ck.tensor("head", n)
            if step is None:
                step = ck.restore()
                if step is None:
                    raise FileNotFoundError("loom: no checkpoint in %s" % self.path)
            else:
                ck.load(step)
        meta = numpy.zeros(int(n[0]), dtype=numpy.int8)
        lens = numpy.zeros(max(1, int(n[1])), dtype=numpy.int64)
        with Checkpoint(world, self.path) as ck:
            ck.tensor("meta", meta)
            ck.tensor("blob_lens", lens)
            ck.load(step)
        got = pickle.loads(meta.tobytes())
        got["blob_lens"] = [int(x) for x in lens]
        return step, got

    def read_metadata(self) -> Any:
        if self.world is None or not self.world._comm:
            self.world = _world(self._world_arg)
        _settle(self.path, self.world)
        self.step, got = self._meta(self.step)
        self._table = got["table"]
        self._lens = got["blob_lens"]
        return got["metadata"]

    def init(self, metadata: Any, is_coordinator: bool) -> None:
        pass

    def prepare_local_plan(self, plan: Any) -> Any:
        return plan

    def prepare_global_plan(self, plans: List[Any]) -> List[Any]:
        return plans

    def _older(self, step: int) -> Optional[int]:
        """The newest committed step before step (from the directory)."""
        best = None
        for n in os.listdir(self.path):
            if n.startswith("step-") and n[5:].isdigit() and int(n[5:]) < step and \
                    os.path.exists(os.path.join(self.path, n, "MANIFEST")):
                best = max(best or 0, int(n[5:]))
        return best

    def read_data(self, plan: Any, planner: Any) -> Any:
        from torch.futures import Future
        import io
        import numpy
        import torch
        m = dcp()
        LoadItemType = m.planner.LoadItemType
        world = self.world
        assert world is not None and self.step is not None
        while True:
            table = self._table
            reads: List[Tuple[Any, Any, str]] = []
            with Checkpoint(world, self.path) as ck:
                wanted: Dict[str, List[Any]] = {}
                for ri in plan.items:
                    wanted.setdefault(ri.storage_index.fqn, []).append(ri)
                for fqn, (lname, dt, size, itemsize) in table["tensors"].items():
                    gshape = list(size) + [itemsize]
                    items = [ri for ri in wanted.get(fqn, [])
                             if ri.type != LoadItemType.BYTE_IO]
                    if not items:
                        ck.declare(lname, "int8", gshape)
                    for ri in items:
                        chunk = ri.storage_index.offset or [0] * len(size)
                        off = [a + b for a, b in zip(chunk, ri.storage_offsets)] + [0]
                        buf = numpy.zeros(tuple(ri.lengths) + (itemsize,), dtype=numpy.int8)
                        ck.tensor(lname, buf, global_shape=gshape, offset=off)
                        reads.append((ri, buf, dt))
                for i, (fqn, (lname, _r)) in enumerate(sorted(
                        table["blobs"].items(), key=lambda kv: int(kv[1][0][1:]))):
                    items = [ri for ri in wanted.get(fqn, [])
                             if ri.type == LoadItemType.BYTE_IO]
                    length = max(1, self._lens[i])
                    if items:
                        buf = numpy.zeros(length, dtype=numpy.int8)
                        ck.tensor(lname, buf)
                        for ri in items:
                            reads.append((ri, buf, ""))
                    else:
                        ck.declare(lname, "int8", [length])
                try:
                    ck.load(self.step)
                    break
                except IOFailure as e:
                    older = self._older(self.step)
                    if older is None:
                        raise
                    if world.rank == 0:
                        sys.stderr.write("loom: warning: DCP checkpoint step %d in %s is damaged "
                                         "(%s); loading step %d instead\n" %
                                         (self.step, self.path, e, older))
            self.step, got = self._meta(older)
            self._table = got["table"]
            self._lens = got["blob_lens"]
        for ri, buf, dt in reads:
            if not dt:
                planner.load_bytes(ri, io.BytesIO(buf.tobytes()))
                continue
            src = torch.from_numpy(buf).reshape(-1).view(_dtype_of(dt)).reshape(
                tuple(ri.lengths))
            target = planner.resolve_tensor(ri).detach()
            target.copy_(src)
            planner.commit_tensor(ri, target)
        fut: Any = Future()
        fut.set_result(None)
        return fut

    def close(self) -> None:
        """Nothing to free: a reader holds no handle between calls, and the
        world made without world= is shared (closed at interpreter exit)."""
        self.world = None


__all__ = ["StorageReader", "StorageWriter", "dcp"]
