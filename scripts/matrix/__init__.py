"""The conformance matrix of issue 30 (``make peers-matrix``): each real engine x speculation method x sampling
setting, speculation on against off.  ``settings`` holds the settings as data; ``vllm_server``, ``llama_cpp`` and
``transformers`` drive one engine each (each in its own virtualenv) and write ``docs/data/matrix/<engine>.json`` (the cells, committed; whole reports in ``.peers/matrix/reports/``);
``table`` merges them into ``docs/matrix.md``."""
