"""Verification schemes as records (:class:`Scheme`), and their registry.

A scheme is one record carrying everything every consumer reads - its verifier (and uniforms
form, and fused twin), its exact one-step law, its tokens-per-step moments for F28, the catalogue
cases it is checked on, its rows of ``specdec compare``.  ``generate(verifier=NAME)``, the
conformance engine, the CLI, the adapters (:func:`declare`) and ``specdec compare`` all read the
registry; nothing tags functions with attributes or keeps a list of names.

A new scheme is its verifier (``verify/``), its exact law (``laws/``), its record (here, one module)
and its tests; the line below that registers it is the only place outside its own files that names it.
"""

from . import block, kseq, mss, token, tree
from .record import CASE_FAMILIES, SHAPES, Scheme, SchemeError
from .registry import declare, get, load_fused, names, register, scheme_of, unregister
from .table import MAX_TABLE_DRAFTS, chain_size_error, scheme_table

for _scheme in (token.SCHEME, block.SCHEME, kseq.SCHEME, mss.SCHEME, tree.SCHEME):  # the built-in schemes
    register(_scheme)

__all__ = ["CASE_FAMILIES", "MAX_TABLE_DRAFTS", "SHAPES", "Scheme", "SchemeError", "chain_size_error", "declare", "get",
           "load_fused", "names", "register", "scheme_of", "scheme_table", "unregister"]
