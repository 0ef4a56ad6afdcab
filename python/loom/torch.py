"""loom.torch: PyTorch on loom (torch itself is imported only when used):
Resumable, the three-line preemption-safe training loop; StorageWriter and
StorageReader, torch.distributed.checkpoint on libloom's checkpoint
(two-phase I/O, the node-local tier with partner copies, async save,
checksums, fallback to the previous step). See loom-python(7)."""
from ._dcp import StorageReader, StorageWriter, dcp
from ._resumable import Resumable, cpu_world, durable_save

__all__ = ["Resumable", "StorageReader", "StorageWriter", "cpu_world", "dcp", "durable_save"]
