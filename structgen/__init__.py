"""structgen: language model output that is valid by construction.

The data flow, and the package layout that follows it:

* :mod:`structgen.schema` - JSON Schema, Pydantic models and Python types become a grammar;
* :mod:`structgen.grammar` - the one grammar form, read from and written to GBNF, GLRM and regex,
  with an exact byte-level reference matcher;
* :mod:`structgen.vocab` and :mod:`structgen.engine` - a grammar and a tokenizer vocabulary
  compile into a reusable ``Constraint`` whose per-request state gives next-token masks;
* :mod:`structgen.integrations`, :mod:`structgen.generate` (``generate``, ``stream``),
  :mod:`structgen.tools`, :mod:`structgen.cli` - the front.
"""

from .engine import Constraint, EngineLimits, State, apply_mask_numpy, apply_mask_torch, fill_bitmasks
from .errors import (
    ConstraintError,
    GenerationError,
    GrammarError,
    LimitError,
    RegexError,
    SchemaError,
    StructgenError,
    VocabError,
)
from .generate import GenerationResult, Stream, generate, generate_result, stream
from .grammar import Grammar
from .limits import GrammarLimits
from .tools import FinalAnswer, Tool, ToolCall, ToolSet
from .vocab import Vocab

__version__ = "0.1.0"

__all__ = [
    "Constraint",
    "EngineLimits",
    "State",
    "Vocab",
    "apply_mask_numpy",
    "apply_mask_torch",
    "fill_bitmasks",
    "ConstraintError",
    "FinalAnswer",
    "GenerationError",
    "GenerationResult",
    "Grammar",
    "GrammarError",
    "GrammarLimits",
    "LimitError",
    "RegexError",
    "SchemaError",
    "Stream",
    "StructgenError",
    "Tool",
    "ToolCall",
    "ToolSet",
    "VocabError",
    "__version__",
    "generate",
    "generate_result",
    "stream",
]
