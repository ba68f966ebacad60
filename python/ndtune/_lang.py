"""Kernel Tuner's `lang` values and the language ndtune builds for each (CuPy, NVCUDA and PyCUDA
are Kernel Tuner's ways of running CUDA); kept apart from `_kt`, which imports NumPy."""

LANGUAGES = {"opencl": "opencl", "cuda": "cuda", "cupy": "cuda", "nvcuda": "cuda",
             "pycuda": "cuda"}


def language_of(lang):
    """The language ndtune builds for Kernel Tuner's `lang`, None for one it does not."""
    return LANGUAGES.get(str(lang).lower())
