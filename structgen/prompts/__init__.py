"""Prompts: chat messages checked in OpenAI's shape, and rendered through the model's own template.

* :mod:`.messages` - OpenAI-style messages (system, user, assistant with ``tool_calls``, tool
  results) checked and normalised, and the template-free transcript for models without a template;
* :mod:`.template` - a model's Jinja2 chat template rendered the way the ecosystem renders it
  (Hugging Face's ``apply_chat_template``: a sandboxed environment, ``tools=``,
  ``add_generation_prompt``), and whether the template knows tools.
"""

from .messages import check_messages, check_text, is_chat, plain_transcript
from .template import ChatTemplate, compiled_template

__all__ = ["ChatTemplate", "compiled_template", "check_messages", "check_text", "is_chat", "plain_transcript"]
