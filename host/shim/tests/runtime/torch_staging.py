"""PyTorch moving tensors between the host and the GPUs with no kernel of its own: host data to
cuda:0, to cuda:1 where there is one, and back to the host, with the pool allocator
(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync). One line per fact."""

import torch

count = torch.cuda.device_count()
print(f"devices {count} backend {torch.cuda.get_allocator_backend()}")
host = torch.arange(1 << 16, dtype=torch.int32)
on0 = host.to("cuda:0")
pinned = torch.empty_like(host).pin_memory()
pinned.copy_(on0)
print(f"host -> cuda:0 -> pinned equal {torch.equal(pinned, host)}")
if count > 1:
    on1 = on0.to("cuda:1")
    back = on1.cpu()
    print(f"cuda:0 -> cuda:1 -> host equal {torch.equal(back, host)} peer {torch.cuda.can_device_access_peer(1, 0)}")
else:
    print("one GPU: no cuda:1")
print("done")
