"""python -m bench.gpu: GPU shares on a real GPU (see __main__)."""
