"""Strict Python checks of JSON Schema formats, written independently of the grammar code.

Each ``check_<format>(s)`` says whether ``s`` belongs to the language structgen documents for that
format (including its documented departures, so that a difference is always a bug on one side).
They use Python's regular expressions, ``ipaddress`` and plain arithmetic.
"""

from __future__ import annotations

import ipaddress
import re

A = re.ASCII


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def check_date(s: str) -> bool:
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", s, A)
    if not m:
        return False
    y, mo, d = (int(g) for g in m.groups())
    days = [31, 29 if _is_leap(y) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return 1 <= mo <= 12 and 1 <= d <= days[mo - 1]


def check_time(s: str) -> bool:
    m = re.fullmatch(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))", s, A)
    if not m:
        return False
    h, mi, sec = int(m[1]), int(m[2]), int(m[3])
    if h > 23 or mi > 59 or sec > 60:
        return False
    offset = 0
    if not m[5]:
        oh, om = int(m[7]), int(m[8])
        if oh > 23 or om > 59:
            return False
        offset = (oh * 60 + om) * (1 if m[6] == "+" else -1)
    if sec == 60:
        return (h * 60 + mi - offset) % 1440 == 23 * 60 + 59
    return True


def check_date_time(s: str) -> bool:
    if len(s) < 11 or s[10] not in "Tt":
        return False
    return check_date(s[:10]) and check_time(s[11:])


_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DUR_DATE = rf"(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_DUR_TIME})?"


def check_duration(s: str) -> bool:
    return re.fullmatch(rf"P(?:{_DUR_DATE}|{_DUR_TIME}|\d+W)", s, A) is not None


def check_ipv4(s: str) -> bool:
    parts = s.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not re.fullmatch(r"[0-9]{1,3}", p, A) or (len(p) > 1 and p[0] == "0") or int(p) > 255:
            return False
    return True


def check_ipv6(s: str, *, min_gap: int = 1) -> bool:
    """RFC 4291 text; ``min_gap`` is how many groups ``::`` must stand for (2 in RFC 5321)."""
    if not s.isascii() or "%" in s or "/" in s or s.strip() != s:
        return False
    try:
        ipaddress.IPv6Address(s)
    except ValueError:
        return False
    if "::" in s:
        head, tail = s.split("::")
        explicit = [g for g in (head.split(":") if head else []) + (tail.split(":") if tail else [])]
        groups = sum(2 if "." in g else 1 for g in explicit)
        return 8 - groups >= min_gap
    return True


def check_uuid(s: str) -> bool:
    return re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", s) is not None


def check_hostname(s: str, *, international: bool = False) -> bool:
    if not 1 <= len(s) <= 253:
        return False
    if international:
        s = re.sub("[\u3002\uff0e\uff61]", ".", s)
    for label in s.split("."):
        if not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", label):
            return False
        if label[2:4] == "--":
            return False
    return True


_ATEXT = r"A-Za-z0-9!#$%&'*+\-/=?^_`{|}~"
_QTEXT = r"\x20\x21\x23-\x5b\x5d-\x7e"


def check_email(s: str, *, international: bool = False) -> bool:
    extra = r"\u0080-\U0010ffff" if international else ""
    atom = rf"[{_ATEXT}{extra}]+"
    local = rf"(?:{atom}(?:\.{atom})*|\"(?:[{_QTEXT}{extra}]|\\[\x20-\x7e])*\")"
    m = re.fullmatch(rf"({local})@(.*)", s, re.DOTALL)
    if not m:
        return False
    domain = m[2]
    sub = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    if re.fullmatch(rf"{sub}(?:\.{sub})*", domain):
        return True
    lit = re.fullmatch(r"\[(.*)\]", domain, re.DOTALL)
    if not lit:
        return False
    body = lit[1]
    if check_ipv4(body):
        return True
    return body[:5].lower() == "ipv6:" and check_ipv6(body[5:], min_gap=2)


_UCS = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    "\U00010000-\U0001fffd\U00020000-\U0002fffd\U00030000-\U0003fffd\U00040000-\U0004fffd"
    "\U00050000-\U0005fffd\U00060000-\U0006fffd\U00070000-\U0007fffd\U00080000-\U0008fffd"
    "\U00090000-\U0009fffd\U000a0000-\U000afffd\U000b0000-\U000bfffd\U000c0000-\U000cfffd"
    "\U000d0000-\U000dfffd\U000e1000-\U000efffd"
)
_PRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_PCT = r"%[0-9A-Fa-f]{2}"
_SUB = r"!$&'()*+,;="


def check_reference(s: str, *, absolute: bool, relative: bool, international: bool) -> bool:
    """RFC 3986 URI / URI-reference, RFC 3987 IRI / IRI-reference, by splitting then checking parts."""
    unres = r"A-Za-z0-9\-._~" + (_UCS if international else "")
    pchar = rf"(?:[{unres}{_SUB}:@]|{_PCT})"
    m = re.fullmatch(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", s, re.DOTALL)
    if not m:
        return False
    scheme, authority, path, query, fragment = m.groups()
    if scheme is not None:
        if not absolute or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+\-.]*", scheme):
            return False
    elif not relative:
        return False
    if authority is not None:
        if authority.count("@") > 1:
            return False
        userinfo, _, hostport = authority.rpartition("@")
        if "@" in authority and not re.fullmatch(rf"(?:[{unres}{_SUB}:]|{_PCT})*", userinfo):
            return False
        if hostport.startswith("["):
            end = hostport.find("]")
            if end < 0:
                return False
            inside, rest = hostport[1:end], hostport[end + 1 :]
            future = re.fullmatch(rf"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~{_SUB}:]+", inside)
            if not (future or check_ipv6(inside)):
                return False
        else:
            host, _, _port = hostport.partition(":")
            rest = hostport[len(host) :]
            if not re.fullmatch(rf"(?:[{unres}{_SUB}]|{_PCT})*", host):
                return False
        if rest and not re.fullmatch(r":[0-9]*", rest):
            return False
        if path and not path.startswith("/"):
            return False
    else:
        if path.startswith("//"):
            return False
        if scheme is None and path and not path.startswith("/") and ":" in path.split("/")[0]:
            return False
        if path.startswith("/") and len(path) > 1 and path[1] == "/":
            return False
    segments = path.split("/")
    if not all(re.fullmatch(rf"{pchar}*", seg, re.DOTALL) for seg in segments):
        return False
    query_extra = _PRIVATE if international else ""
    if query is not None and not re.fullmatch(rf"(?:{pchar}|[/?{query_extra}])*", query, re.DOTALL):
        return False
    if fragment is not None and not re.fullmatch(rf"(?:{pchar}|[/?])*", fragment, re.DOTALL):
        return False
    return True


def check_uri_template(s: str) -> bool:
    literal = rf"(?:[\x21\x23\x24\x26-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e{_UCS}{_PRIVATE}]|{_PCT})"
    varchar = rf"(?:[A-Za-z0-9_]|{_PCT})"
    varspec = rf"{varchar}(?:\.?{varchar})*(?::[1-9][0-9]{{0,3}}|\*)?"
    expression = rf"\{{[+#./;?&]?{varspec}(?:,{varspec})*\}}"
    return re.fullmatch(rf"(?:{literal}|{expression})*", s) is not None


def check_json_pointer(s: str) -> bool:
    return s == "" or (s.startswith("/") and re.fullmatch(r"(?:/(?:[^/~]|~[01])*)*", s, re.DOTALL) is not None)


def check_relative_json_pointer(s: str) -> bool:
    m = re.fullmatch(r"(0|[1-9][0-9]*)(.*)", s, re.DOTALL | A)
    return bool(m) and (m[2] == "#" or check_json_pointer(m[2]))


CHECKS = {
    "date": check_date,
    "time": check_time,
    "date-time": check_date_time,
    "duration": check_duration,
    "ipv4": check_ipv4,
    "ipv6": check_ipv6,
    "uuid": check_uuid,
    "hostname": check_hostname,
    "idn-hostname": lambda s: check_hostname(s, international=True),
    "email": check_email,
    "idn-email": lambda s: check_email(s, international=True),
    "uri": lambda s: check_reference(s, absolute=True, relative=False, international=False),
    "uri-reference": lambda s: check_reference(s, absolute=True, relative=True, international=False),
    "iri": lambda s: check_reference(s, absolute=True, relative=False, international=True),
    "iri-reference": lambda s: check_reference(s, absolute=True, relative=True, international=True),
    "uri-template": check_uri_template,
    "json-pointer": check_json_pointer,
    "relative-json-pointer": check_relative_json_pointer,
}
