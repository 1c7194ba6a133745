"""Who runs what, where: admission (pure: may this request start, wait, or
never), queue order (pure: FIFO, priority, DRF), placement (pure: which node
and GPUs), the inventory of resource groups and nodes, and the ledger -- the
IO edge that reads the world once, asks the pure parts, and records the
allocation. Also the pending queue pass, its waiters, and GPU discovery."""
