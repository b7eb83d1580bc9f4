"""The streams of the conformance engine: how each level's subject is sampled and counted.

One kind of stream per level; each draws a chunk where the subject lives (drafts with torch's own
``multinomial``, an implementation independent of ours; the subject's randomness from the chunk's
counter-based generator), reads what the subject returned through its Protocol, and adds the chunk
to its tally; ``evaluate`` turns the tally into checks.

* :mod:`.one_step` - one verification step of a token-level or multi-draft verifier: the first
  emitted token and the acceptance (F1, F4; F7-F10, F15);
* :mod:`.chains` - a decoder driven by a token-level verifier on a chain's tables: its first L
  tokens vs the chain law (F35, located by F36);
* :mod:`.trees` - the same for a tree verifier, and the acceptance at the root;
* :mod:`.decoder_rows` - a whole decoder's first L tokens after each prompt vs the exact law (F35);
* :mod:`.ab` - two decoders' first L tokens against each other (H1-H3), n re-planned from the counts.

Outcomes a subject cannot legally produce (ids outside the vocabulary, accepted counts outside
[0, K]) are counted in a last "invalid" cell, which makes the check fail at once.  Every call of the
subject goes through a :class:`~specdec.conformance.calls.CallGuard`: what the subject raises, a
call that hangs past the timeout, or a broken Protocol becomes the report's ERROR, naming the call.
"""
