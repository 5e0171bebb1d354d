"""An unmodified PyTorch program: a tensor made on GPU 0 is copied to GPU 1 and back, and
checked. ci/gpu-passthrough.sh runs it through the shim's real backend with a trace, once with
PyTorch's default caching allocator and once with its pool allocator
(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync), to see which peer and pool calls it makes."""

import torch

x = torch.arange(1 << 20, dtype=torch.float32, device="cuda:0")
y = x.to("cuda:1")
z = y.to("cuda:0")
torch.cuda.synchronize(0)
torch.cuda.synchronize(1)
ok = torch.equal(z, x) and torch.equal(y.cpu(), x.cpu())
print(f"torch {torch.__version__} backend {torch.cuda.get_allocator_backend()} "
      f"peer 0->1 {torch.cuda.can_device_access_peer(1, 0)} copied {y.numel()} floats, equal {ok}")
