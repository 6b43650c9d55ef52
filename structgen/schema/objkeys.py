"""What an object record requires of the value of one key.

A key's value must satisfy, for every :class:`~.model.KeyPolicy` of the record, that policy's
verdict: its ``properties`` schema if it lists the key, else the schemas of all its
``patternProperties`` whose pattern matches the key, else its ``additionalProperties``.
"""

from __future__ import annotations

from typing import Any

from .model import Handle, KeyPolicy, ObjectC, all_of


def policy_verdict(policy: KeyPolicy, key: str, ctx: Any) -> Handle:
    """``properties[key]`` and every matching ``patternProperties`` schema; if neither applies,
    ``additionalProperties``."""
    own = policy.prop_map.get(key)
    matched = [own] if own is not None else []
    for pat, h in policy.patterns:
        verdict = ctx.pattern_matches(pat, policy.ptr, key)
        if verdict is None:  # lenient mode refused the pattern: nothing is known about this key
            return all_of(*matched)
        if verdict:
            matched.append(h)
    if matched:
        return all_of(*matched)
    return policy.additional


def key_verdict(rec: ObjectC, key: str, ctx: Any) -> Handle:
    """The handle every value of ``key`` must satisfy (``TRUE`` when nothing is said)."""
    return all_of(*(policy_verdict(p, key, ctx) for p in rec.policies))


def listed_keys(rec: ObjectC) -> list[str]:
    """Keys the record names: properties of every policy in order, then other required keys."""
    out: dict[str, None] = {}
    for p in rec.policies:
        for k, _ in p.props:
            out.setdefault(k, None)
    for k in rec.required_order:
        out.setdefault(k, None)
    for k in sorted(rec.required - out.keys()):
        out.setdefault(k, None)
    return list(out)
