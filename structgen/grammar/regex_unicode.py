"""Unicode character sets for the regex reader: properties, ``\\d \\w \\s``, POSIX classes, case folding.

Every set is a tuple of inclusive, sorted, merged code point ranges (:data:`ir.Ranges`). Sets that
need Unicode data are computed once and cached: property membership comes from the ``regex``
package (scanning one string of all code points with ``\\p{...}+``), simple case folding from
Python's own case mappings. Building any one set costs a few milliseconds after a one-time setup
of about 0.2 s.

Name lookup differs by flavour and lives here too: ECMA-262 takes property names and values
exactly as written (its own tables), Rust regex matches them loosely (UAX #44 LM3: case, spaces,
``_``, ``-`` and a leading ``is`` are ignored).
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left, bisect_right
from functools import lru_cache

import regex as _regex_pkg

from .. import caches
from .ir import MAX_CODEPOINT, Ranges, complement_ranges, normalize_ranges

# ---------------------------------------------------------------------------------------------
# Range helpers


def union(*sets: Ranges) -> Ranges:
    return normalize_ranges([r for s in sets for r in s], MAX_CODEPOINT)


def negate(ranges: Ranges, upper: int = MAX_CODEPOINT) -> Ranges:
    return complement_ranges(normalize_ranges(ranges, upper), upper)


def intersect(a: Ranges, b: Ranges, upper: int = MAX_CODEPOINT) -> Ranges:
    return negate(union(negate(a, upper), negate(b, upper)), upper)


def difference(a: Ranges, b: Ranges, upper: int = MAX_CODEPOINT) -> Ranges:
    return intersect(a, negate(b, upper), upper)


def symmetric_difference(a: Ranges, b: Ranges, upper: int = MAX_CODEPOINT) -> Ranges:
    return union(difference(a, b, upper), difference(b, a, upper))


# ---------------------------------------------------------------------------------------------
# Fixed sets

DIGIT_ASCII: Ranges = ((0x30, 0x39),)
WORD_ASCII: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
#: Rust's ASCII ``\s`` (and POSIX ``[:space:]``): \t \n \v \f \r and space.
SPACE_ASCII: Ranges = ((0x09, 0x0D), (0x20, 0x20))
#: ECMA-262 ``\s``: WhiteSpace (TAB, VT, FF, ZWNBSP, every Zs) plus LineTerminator (LF, CR, LS, PS).
#: Zs has been stable since Unicode 6.3 (U+180E left it), so it is written out.
SPACE_ECMA: Ranges = normalize_ranges(
    [
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ],
    MAX_CODEPOINT,
)
#: What ECMA-262 ``.`` does not match: the line terminators \n \r U+2028 U+2029.
LINE_TERMINATORS_ECMA: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
NEWLINE: Ranges = ((0x0A, 0x0A),)

#: Rust's POSIX classes ``[[:name:]]``, always ASCII.
POSIX_CLASSES: dict[str, Ranges] = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    "alpha": ((0x41, 0x5A), (0x61, 0x7A)),
    "ascii": ((0x00, 0x7F),),
    "blank": ((0x09, 0x09), (0x20, 0x20)),
    "cntrl": ((0x00, 0x1F), (0x7F, 0x7F)),
    "digit": DIGIT_ASCII,
    "graph": ((0x21, 0x7E),),
    "lower": ((0x61, 0x7A),),
    "print": ((0x20, 0x7E),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "space": SPACE_ASCII,
    "upper": ((0x41, 0x5A),),
    "word": WORD_ASCII,
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}

# ---------------------------------------------------------------------------------------------
# Property tables (names as in Unicode's PropertyAliases / PropertyValueAliases, which ECMA-262
# adopts; the first name of each tuple is the one the ``regex`` package is asked for).

GENERAL_CATEGORIES: tuple[tuple[str, ...], ...] = (
    ("C", "Other"),
    ("Cc", "Control", "cntrl"),
    ("Cf", "Format"),
    ("Cn", "Unassigned"),
    ("Co", "Private_Use"),
    ("Cs", "Surrogate"),
    ("L", "Letter"),
    ("LC", "Cased_Letter"),
    ("Ll", "Lowercase_Letter"),
    ("Lm", "Modifier_Letter"),
    ("Lo", "Other_Letter"),
    ("Lt", "Titlecase_Letter"),
    ("Lu", "Uppercase_Letter"),
    ("M", "Mark", "Combining_Mark"),
    ("Mc", "Spacing_Mark"),
    ("Me", "Enclosing_Mark"),
    ("Mn", "Nonspacing_Mark"),
    ("N", "Number"),
    ("Nd", "Decimal_Number", "digit"),
    ("Nl", "Letter_Number"),
    ("No", "Other_Number"),
    ("P", "Punctuation", "punct"),
    ("Pc", "Connector_Punctuation"),
    ("Pd", "Dash_Punctuation"),
    ("Pe", "Close_Punctuation"),
    ("Pf", "Final_Punctuation"),
    ("Pi", "Initial_Punctuation"),
    ("Po", "Other_Punctuation"),
    ("Ps", "Open_Punctuation"),
    ("S", "Symbol"),
    ("Sc", "Currency_Symbol"),
    ("Sk", "Modifier_Symbol"),
    ("Sm", "Math_Symbol"),
    ("So", "Other_Symbol"),
    ("Z", "Separator"),
    ("Zl", "Line_Separator"),
    ("Zp", "Paragraph_Separator"),
    ("Zs", "Space_Separator"),
)

#: The binary properties ECMA-262 lists (table "Binary Unicode property aliases"), long name first.
BINARY_PROPERTIES: tuple[tuple[str, ...], ...] = (
    ("ASCII",),
    ("ASCII_Hex_Digit", "AHex"),
    ("Alphabetic", "Alpha"),
    ("Any",),
    ("Assigned",),
    ("Bidi_Control", "Bidi_C"),
    ("Bidi_Mirrored", "Bidi_M"),
    ("Case_Ignorable", "CI"),
    ("Cased",),
    ("Changes_When_Casefolded", "CWCF"),
    ("Changes_When_Casemapped", "CWCM"),
    ("Changes_When_Lowercased", "CWL"),
    ("Changes_When_NFKC_Casefolded", "CWKCF"),
    ("Changes_When_Titlecased", "CWT"),
    ("Changes_When_Uppercased", "CWU"),
    ("Dash",),
    ("Default_Ignorable_Code_Point", "DI"),
    ("Deprecated", "Dep"),
    ("Diacritic", "Dia"),
    ("Emoji",),
    ("Emoji_Component", "EComp"),
    ("Emoji_Modifier", "EMod"),
    ("Emoji_Modifier_Base", "EBase"),
    ("Emoji_Presentation", "EPres"),
    ("Extended_Pictographic", "ExtPict"),
    ("Extender", "Ext"),
    ("Grapheme_Base", "Gr_Base"),
    ("Grapheme_Extend", "Gr_Ext"),
    ("Hex_Digit", "Hex"),
    ("IDS_Binary_Operator", "IDSB"),
    ("IDS_Trinary_Operator", "IDST"),
    ("ID_Continue", "IDC"),
    ("ID_Start", "IDS"),
    ("Ideographic", "Ideo"),
    ("Join_Control", "Join_C"),
    ("Logical_Order_Exception", "LOE"),
    ("Lowercase", "Lower"),
    ("Math",),
    ("Noncharacter_Code_Point", "NChar"),
    ("Pattern_Syntax", "Pat_Syn"),
    ("Pattern_White_Space", "Pat_WS"),
    ("Quotation_Mark", "QMark"),
    ("Radical",),
    ("Regional_Indicator", "RI"),
    ("Sentence_Terminal", "STerm"),
    ("Soft_Dotted", "SD"),
    ("Terminal_Punctuation", "Term"),
    ("Unified_Ideograph", "UIdeo"),
    ("Uppercase", "Upper"),
    ("Variation_Selector", "VS"),
    ("White_Space", "space"),
    ("XID_Continue", "XIDC"),
    ("XID_Start", "XIDS"),
)

_GC_EXACT = {alias: names[0] for names in GENERAL_CATEGORIES for alias in names}
_BINARY_EXACT = {alias: names[0] for names in BINARY_PROPERTIES for alias in names}
_SCRIPT_PROPS_EXACT = {"Script": "sc", "sc": "sc", "Script_Extensions": "scx", "scx": "scx"}
_GC_PROPS_EXACT = ("General_Category", "gc")


class PropertyError(ValueError):
    """A property name or value that is unknown or not supported (the message says which)."""


# ---------------------------------------------------------------------------------------------
# Computing sets


@lru_cache(maxsize=1)
def _all_codepoints() -> str:
    # Lone surrogates are valid in a Python str, so every code point appears exactly once and a
    # match's span is its code point range.
    return "".join(map(chr, range(MAX_CODEPOINT + 1)))


@lru_cache(maxsize=None)
def _scan(regex_class: str) -> Ranges:
    """The code points matched by a ``regex``-package class such as ``\\p{gc=Lu}``."""
    pattern = _regex_pkg.compile(regex_class + "+")
    return tuple((m.start(), m.end() - 1) for m in pattern.finditer(_all_codepoints()))


def general_category(short: str) -> Ranges:
    return _scan(f"\\p{{gc={short}}}")


def binary_property(long_name: str) -> Ranges:
    if long_name == "Any":
        return ((0, MAX_CODEPOINT),)
    if long_name == "ASCII":
        return ((0, 0x7F),)
    if long_name == "Assigned":
        return negate(general_category("Cn"))
    try:
        return _scan(f"\\p{{{long_name}=Yes}}")
    except _regex_pkg.error:
        raise PropertyError(f"Unicode property {long_name} is not available (the regex package lacks it)") from None


def script(value: str, extensions: bool) -> Ranges:
    """Script (``sc``) or Script_Extensions (``scx``) ``value``; names are checked by ``regex``."""
    if not value or not all(c.isalnum() or c in "_- " for c in value):
        raise PropertyError(f"invalid script name {value!r}")
    try:
        return _scan(f"\\p{{{'scx' if extensions else 'sc'}={value}}}")
    except _regex_pkg.error:
        raise PropertyError(f"unknown script {value!r}") from None


@lru_cache(maxsize=1)
def rust_word() -> Ranges:
    """Rust regex's Unicode ``\\w``: Alphabetic, marks, decimal numbers, connector punctuation, joiners."""
    return union(
        binary_property("Alphabetic"),
        general_category("M"),
        general_category("Nd"),
        general_category("Pc"),
        binary_property("Join_Control"),
    )


def rust_digit() -> Ranges:
    return general_category("Nd")


def rust_space() -> Ranges:
    return binary_property("White_Space")


# ---------------------------------------------------------------------------------------------
# Property lookup by flavour


def ecma_property(body: str) -> Ranges:
    """The set named by the inside of ECMA-262 ``\\p{...}`` (exact names, as ECMA requires)."""
    if "=" in body:
        name, _, value = body.partition("=")
        if name in _GC_PROPS_EXACT:
            if value not in _GC_EXACT:
                raise PropertyError(f"unknown General_Category value {value!r}")
            return general_category(_GC_EXACT[value])
        if name in _SCRIPT_PROPS_EXACT:
            return script(value, _SCRIPT_PROPS_EXACT[name] == "scx")
        raise PropertyError(
            f"unsupported Unicode property {name!r} (ECMA-262 allows General_Category, Script, Script_Extensions)"
        )
    if body in _GC_EXACT:
        return general_category(_GC_EXACT[body])
    if body in _BINARY_EXACT:
        return binary_property(_BINARY_EXACT[body])
    raise PropertyError(f"unknown Unicode property {body!r}")


def loose_name(name: str) -> str:
    """UAX #44 LM3 loose matching as Rust regex does it.

    A leading ``is`` (any case, as written: not after a space) is dropped, then case, spaces,
    ``_`` and ``-`` are ignored (and non-ASCII characters dropped). ``isc`` stays ``isc`` (it names
    ISO_Comment, not ``C``).
    """
    starts_with_is = name[:2].lower() == "is"
    body = name[2:] if starts_with_is else name
    norm = "".join(c for c in body.lower() if c not in " _-" and c.isascii())
    if starts_with_is and norm == "c":
        return "isc"
    return norm


_GC_LOOSE = {loose_name(alias): names[0] for names in GENERAL_CATEGORIES for alias in names}
_BINARY_LOOSE = {loose_name(alias): names[0] for names in BINARY_PROPERTIES for alias in names}
_GC_LOOSE.update({"any": "*Any", "assigned": "*Assigned", "ascii": "*ASCII"})
_BINARY_LOOSE.pop("any")
_BINARY_LOOSE.pop("assigned")
_BINARY_LOOSE.pop("ascii")
# Rust reads these short names as general categories although they are also property names.
_RUST_GC_FIRST = {"cf", "sc", "lc"}
_RUST_VALUE_PROPS = {
    "generalcategory": "gc",
    "gc": "gc",
    "script": "sc",
    "sc": "sc",
    "scriptextensions": "scx",
    "scx": "scx",
}
_RUST_REFUSED_PROPS = {
    "age": "Age",
    "graphemeclusterbreak": "Grapheme_Cluster_Break",
    "gcb": "Grapheme_Cluster_Break",
    "wordbreak": "Word_Break",
    "wb": "Word_Break",
    "sentencebreak": "Sentence_Break",
    "sb": "Sentence_Break",
}


def _rust_gc(norm: str) -> Ranges | None:
    short = _GC_LOOSE.get(norm)
    if short is None:
        return None
    if short.startswith("*"):
        return binary_property(short[1:])
    return general_category(short)


def rust_property(body: str) -> Ranges:
    """The set named by Rust regex ``\\pX`` / ``\\p{...}`` (without the negation ``\\P`` or ``!=``)."""
    for sep in ("=", ":"):
        if sep in body:
            name, _, value = body.partition(sep)
            prop = loose_name(name)
            if prop in _RUST_REFUSED_PROPS:
                raise PropertyError(f"Unicode property {_RUST_REFUSED_PROPS[prop]} is not supported")
            kind = _RUST_VALUE_PROPS.get(prop)
            if kind is None:
                raise PropertyError(f"unknown or unsupported Unicode property {name.strip()!r}")
            if kind == "gc":
                found = _rust_gc(loose_name(value))
                if found is None:
                    raise PropertyError(f"unknown General_Category value {value.strip()!r}")
                return found
            return script(loose_name(value), kind == "scx")
    norm = loose_name(body)
    if norm in _RUST_GC_FIRST:
        found = _rust_gc(norm)
        assert found is not None
        return found
    if norm in _BINARY_LOOSE:
        return binary_property(_BINARY_LOOSE[norm])
    found = _rust_gc(norm)
    if found is not None:
        return found
    try:
        return script(norm, extensions=False)
    except PropertyError:
        raise PropertyError(f"unknown or unsupported Unicode property {body.strip()!r}") from None


# ---------------------------------------------------------------------------------------------
# Simple case folding

# CaseFolding.txt status S entries newer than Python 3.10's Unicode data that Python's case
# mappings cannot derive (canonically equivalent Greek letters and a ligature pair).
_EXTRA_FOLD_PAIRS = ((0x1FD3, 0x0390), (0x1FE3, 0x03B0), (0xFB05, 0xFB06))


def _simple_fold_key(c: str) -> str:
    # casefold() is full folding; a one-character result is the simple (status C) mapping. Where
    # full folding expands, the simple (status S) mapping, if any, is the lowercase mapping.
    folded = c.casefold()
    if len(folded) == 1:
        return folded
    lower = c.lower()
    return lower if len(lower) == 1 else c


@lru_cache(maxsize=1)
def _fold_table() -> tuple[tuple[int, ...], dict[int, tuple[int, ...]]]:
    """Sorted code points that have case variants, and each one's variants (itself included)."""
    candidates: set[int] = set()
    for prop in ("Changes_When_Casemapped", "Changes_When_Casefolded"):
        for lo, hi in binary_property(prop):
            candidates.update(range(lo, hi + 1))
    groups: dict[str, set[int]] = {}
    newer: list[int] = []
    for cp in candidates:
        c = chr(cp)
        if unicodedata.category(c) == "Cn":
            newer.append(cp)  # assigned after this Python's Unicode version: Python cannot case it
            continue
        key = _simple_fold_key(c)
        groups.setdefault(key, {ord(key)}).add(cp)
    # For those, ask the regex package, whose Unicode data is newer. (Only for those: its
    # case-insensitive matching is not exactly simple folding, e.g. it pairs U+0130 with i.)
    all_text = "".join(map(chr, sorted(candidates)))
    newer_set = set(newer)
    for cp in newer:
        partners = {ord(p) for p in _regex_pkg.findall("(?i)" + _regex_pkg.escape(chr(cp)), all_text)} | {cp}
        older = sorted(partners - newer_set)
        key = _simple_fold_key(chr(older[0])) if older else chr(min(partners))
        groups.setdefault(key, {ord(key)}).update(partners)
    for a, b in _EXTRA_FOLD_PAIRS:
        ga = groups.setdefault(_simple_fold_key(chr(a)), {a})
        gb = groups.setdefault(_simple_fold_key(chr(b)), {b})
        if ga is not gb:
            ga.update(gb)
            gb.update(ga)
    variants: dict[int, tuple[int, ...]] = {}
    for members in groups.values():
        if len(members) > 1:
            ordered = tuple(sorted(members))
            for cp in members:
                variants[cp] = tuple(sorted(set(variants.get(cp, ())) | set(ordered)))
    return tuple(sorted(variants)), variants


def case_fold(ranges: Ranges) -> Ranges:
    """``ranges`` closed under simple case folding (Unicode)."""
    keys, variants = _fold_table()
    extra: list[tuple[int, int]] = []
    for lo, hi in ranges:
        for cp in keys[bisect_left(keys, lo) : bisect_right(keys, hi)]:
            extra.extend((v, v) for v in variants[cp])
    return union(ranges, tuple(extra)) if extra else ranges


def case_fold_ascii(ranges: Ranges) -> Ranges:
    """``ranges`` closed under ASCII case folding only (byte regexes)."""
    extra: list[tuple[int, int]] = []
    for lo, hi in ranges:
        for a, b, shift in ((0x41, 0x5A, 0x20), (0x61, 0x7A, -0x20)):
            s, e = max(lo, a), min(hi, b)
            if s <= e:
                extra.append((s + shift, e + shift))
    return union(ranges, tuple(extra)) if extra else ranges


caches.register_lru(
    "grammar.regex_unicode.all_codepoints",
    _all_codepoints,
    bytes_per_entry=4_460_000,
    estimate="measured (deep_bytes): every code point once, a str",
)
caches.register_lru(
    "grammar.regex_unicode.scan",
    _scan,
    bytes_per_entry=50_000,
    estimate="measured (deep_bytes): 4-85 KB per property class (one entry per distinct class met; unbounded, "
    "but the classes are the finite set of Unicode property names)",
)
caches.register_lru(
    "grammar.regex_unicode.rust_word", rust_word, bytes_per_entry=98_000, estimate="measured (deep_bytes)"
)
caches.register_lru(
    "grammar.regex_unicode.fold_table", _fold_table, bytes_per_entry=428_000, estimate="measured (deep_bytes)"
)
