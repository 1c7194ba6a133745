"""The framework start-up hook (hubgrid_gpu_hook.py + hubgrid-gpu-hook.pth)
and its installer: ``python -m spawner.gpuhook install [SITE_DIR]`` copies
both into SITE_DIR (default: this interpreter's site-packages), so every
Python started there applies a session's GPU memory share on import of
PyTorch / TensorFlow / JAX. The session image copies them the same way."""
