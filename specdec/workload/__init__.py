"""What benchmarks and checks feed the models: the prompt set (six task kinds, eleven prompts each) and
the long original text that prompts of a chosen length are cut from.  Below every layer that measures
(:mod:`specdec.bench`) or adapts a peer (:mod:`specdec.adapters`), so both can use it.

* :mod:`.texts` - the prompts' messages; :mod:`.prompts` - as token ids, and by length;
* :mod:`.prompt_inputs` - prompts as a user gives them (text, chat messages, ids; a JSONL file) and the embedded
  default set of ``specdec check``;
* :mod:`.corpus` - the passages (and their questions) the length prompts are cut from.
"""
