"""structgen: language model output that is valid by construction.

The data flow, and the package layout that follows it:

* :mod:`structgen.schema` - JSON Schema, Pydantic models and Python types become a grammar;
* :mod:`structgen.grammar` - the one grammar form, read from and written to GBNF, GLRM and regex,
  with an exact byte-level reference matcher;
* :mod:`structgen.vocab` and :mod:`structgen.engine` - a grammar and a tokenizer vocabulary
  compile into a reusable ``Constraint`` whose per-request state gives next-token masks;
* :mod:`structgen.tools` and :mod:`structgen.output_types` - what a generation returns (typed
  tool calls, validated objects), as a grammar and a parser;
* :mod:`structgen.decoding` - the one constrained decoding step every front end shares;
* :mod:`structgen.integrations` - model runtimes (llama-cpp-python, transformers) and the
  protocol they implement; :mod:`structgen.prompts` - chat messages and templates;
* :mod:`structgen.generate` (``generate``, ``stream``), :mod:`structgen.chat` (``chat``: tools in
  each model's own format, text or calls, thinking), :mod:`structgen.agent` (``run_agent``),
  :mod:`structgen.cli` - the front.
"""

from .agent import AgentRun, run_agent
from .chat import ChatDelta, ChatResult, ChatStream, achat, achat_stream, chat, chat_stream, prepare_chat
from .engine import (
    Constraint,
    DynamicConstraint,
    EngineLimits,
    EngineTuning,
    State,
    apply_mask_numpy,
    apply_mask_torch,
    fill_bitmasks,
)
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
from .generate import GenerationResult, Stream, agenerate, astream, generate, generate_result, stream
from .grammar import Grammar
from .limits import GrammarLimits
from .tools import FinalAnswer, Tool, ToolCall, ToolSet
from .vocab import Vocab

__version__ = "0.1.0"

__all__ = [
    "AgentRun",
    "ChatDelta",
    "ChatResult",
    "ChatStream",
    "achat",
    "achat_stream",
    "chat",
    "chat_stream",
    "prepare_chat",
    "run_agent",
    "Constraint",
    "DynamicConstraint",
    "EngineLimits",
    "EngineTuning",
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
    "agenerate",
    "astream",
    "generate",
    "generate_result",
    "stream",
]
