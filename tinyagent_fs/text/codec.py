"""Bytes to text and back without losing a single byte.

Agents edit files through text, so every accepted file must come back byte for
byte: same encoding, same byte order mark, same line endings. Line endings are
kept inside the text rather than normalised, so an edit only changes the bytes
it means to change. A file is accepted only when re-encoding its decoded text
reproduces it exactly; anything else is refused as NOT_TEXT rather than being
rewritten lossily.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import charset_normalizer

from tinyagent_fs._runtime.digest import note_utf8
from tinyagent_fs.errors import ErrorCode, ToolError

SNIFF_BYTES = 8192
"""How much of a file's start ``decode_text`` judges by (signatures, NUL bytes)."""

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
"""UTF-32 first: its little-endian BOM begins with the UTF-16 one."""

_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"),
    (0, b"GIF89a", "GIF image"),
    (0, b"II*\x00", "TIFF image"),
    (0, b"MM\x00*", "TIFF image"),
    (0, b"\x00\x00\x01\x00", "ICO image"),
    (0, b"%PDF-", "PDF document"),
    (0, b"PK\x03\x04", "ZIP archive"),
    (0, b"PK\x05\x06", "ZIP archive"),
    (0, b"PK\x07\x08", "ZIP archive"),
    (0, b"\x1f\x8b", "gzip archive"),
    (0, b"\xfd7zXZ\x00", "xz archive"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (0, b"\x28\xb5\x2f\xfd", "zstd archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (257, b"ustar", "tar archive"),
    (0, b"\x7fELF", "ELF executable"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xce\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xfe\xed\xfa\xcf", "Mach-O executable"),
    (0, b"\xfe\xed\xfa\xce", "Mach-O executable"),
    (0, b"\xca\xfe\xba\xbe", "Java class file or Mach-O universal binary"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"\x89HDF\r\n\x1a\n", "HDF5 data"),
    (0, b"\x93NUMPY", "NumPy array"),
    (0, b"OggS", "Ogg media"),
    (0, b"fLaC", "FLAC audio"),
    (0, b"\x1a\x45\xdf\xa3", "Matroska/WebM video"),
    (0, b"wOFF", "WOFF font"),
    (0, b"wOF2", "WOFF2 font"),
    (0, b"\x00\x01\x00\x00\x00", "TrueType font"),
)
"""Signatures that no plain-text file plausibly starts with."""

_PATTERN_MAGIC: tuple[tuple[re.Pattern[bytes], str], ...] = (
    (re.compile(rb"RIFF....WEBP", re.DOTALL), "WebP image"),
    (re.compile(rb"RIFF....WAVE", re.DOTALL), "WAV audio"),
    (re.compile(rb"RIFF....AVI ", re.DOTALL), "AVI video"),
    (re.compile(rb"\x00...ftyp", re.DOTALL), "MP4/QuickTime media"),
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2 archive"),
    (re.compile(rb"BM.{4}\x00\x00\x00\x00", re.DOTALL), "BMP image"),
    (re.compile(rb"\x80[\x02-\x05]"), "Python pickle"),
    (re.compile(rb"MZ.{0,62}\x00", re.DOTALL), "Windows executable"),
)

_MAGIC_BY_OFFSET: tuple[tuple[int, tuple[bytes, ...]], ...] = tuple(
    (offset, tuple(signature for at, signature, _ in _MAGIC if at == offset))
    for offset in dict.fromkeys(offset for offset, _, _ in _MAGIC)
)
_ANY_PATTERN_MAGIC = re.compile(
    b"|".join(b"(" + pattern.pattern + b")" for pattern, _ in _PATTERN_MAGIC), re.DOTALL
)
"""``_PATTERN_MAGIC`` as one pattern, a group per entry in order (DOTALL is the flag
of every entry with a dot; the others have none), so the first entry that matches
is the group that did."""

_BINARY_SUFFIXES: dict[str, str] = {
    ".pyc": "Python bytecode",
    ".so": "shared library",
    ".dylib": "shared library",
    ".dll": "Windows executable",
    ".exe": "Windows executable",
    ".o": "object file",
    ".a": "static library",
    ".class": "Java class file",
    ".db": "database",
    ".bin": "binary data",
}
"""Labels for binary content no signature names; only used once content is known binary."""

_PREFERRED_LEGACY: tuple[str, ...] = tuple(
    codecs.lookup(name).name
    for name in (
        "cp1252",
        "latin-1",
        "cp932",
        "shift_jis",
        "euc_jp",
        "gb18030",
        "gbk",
        "cp949",
        "euc_kr",
        "big5",
        "cp1251",
        "koi8_r",
        "cp1250",
        "iso8859-15",
    )
)
"""Tie-breaker when charset-normalizer finds several equally clean decodings.

Short texts often decode cleanly in a dozen code pages; the most widely used one
is the best guess a person would make.
"""

_WESTERN = frozenset({"cp1252", "latin-1", "iso8859-15", "cp850", "cp437", "mac-roman"})
_MULTIBYTE = frozenset(
    codecs.lookup(name).name
    for name in ("cp932", "shift_jis", "euc_jp", "gb18030", "gbk", "gb2312", "big5", "cp949")
) | {codecs.lookup("euc_kr").name}
_EAST_ASIAN = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "HALFWIDTH"})
"""Scripts written together (kanji with kana): one script for this count."""
_MIN_LETTERS_MULTIBYTE = 2
"""Two letters decoded from valid multi-byte sequences are hardly chance."""
_MIN_LETTERS_SINGLE_BYTE = 8
"""Any byte is a letter in some single-byte code page: it takes more to be sure."""
_SCRIPT_SHARE = 0.9
"""A decoding other than the Western default needs this share of its non-ASCII
letters in one non-Latin script (CJK ideographs, kana, Cyrillic, Greek...)."""
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_WORD = re.compile(r"[^\W\d_]+")
_SCORED_CHARS = 65536
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes([*range(0x09), *range(0x0E, 0x20), 0x7F])
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_ASCII_BYTES = bytes(range(128))
_ASCII_TEXT = _ASCII_BYTES.decode("ascii")
_ASCII_STABLE = frozenset(
    name
    for name in _MULTIBYTE
    if _ASCII_TEXT.encode(name) == _ASCII_BYTES and _ASCII_BYTES.decode(name) == _ASCII_TEXT
)
"""Multi-byte codecs in which every ASCII byte on its own is that ASCII character."""


_BYTE_FOR_BYTE = frozenset({"cp1252"})
"""Code pages whose strict decode always encodes back to the same bytes: each byte
decodes on its own to one character no other byte gives (the test suite checks
every byte), so the re-encode check can be skipped."""


@dataclass(frozen=True)
class DecodedText:
    """A file's text plus everything needed to write it back unchanged.

    ``newline`` is the dominant line ending, for new lines an edit inserts; the
    text itself keeps every original ending. ``lines``: how many lines
    ``split_lines`` gives, when already known (counting a large text costs a
    pass over it).
    """

    text: str
    encoding: str
    bom: bytes
    newline: str
    lines: int | None = field(default=None, compare=False)


UTF8_LF = DecodedText("", "utf-8", b"", "\n")
"""How a file that does not exist yet is written: UTF-8, no BOM, LF line endings."""


def decode_text(data: bytes, name: str = "") -> DecodedText:
    """Decode a file's bytes, or raise NOT_TEXT naming what the bytes look like.

    Order: byte order marks, then the binary sniff (signatures; NUL bytes in the
    first 8 KB unless the data is BOM-less UTF-16), then strict UTF-8, then
    legacy code pages. The sniff comes before UTF-8 because a pure-ASCII PDF or
    a NUL-padded binary is valid UTF-8 yet no file a text tool should edit.
    """
    label = f"{name!r}" if name else "The data"
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = _decode_exact(data[len(bom) :], encoding)
            if text is not None:
                return _decoded(text, encoding, bom)
            if encoding.startswith("utf-32"):
                continue
            raise ToolError(
                ErrorCode.NOT_TEXT,
                f"{label} starts with a {encoding} byte order mark but is not valid {encoding}.",
                _NOT_TEXT_HINT,
                details={"detected": f"invalid {encoding}"},
            )
    kind = _magic_type(data)
    if kind is None and b"\x00" in data[:SNIFF_BYTES]:
        encoding = _bomless_utf16(data)
        text = _decode_exact(data, encoding) if encoding else None
        if encoding and text is not None:
            return _decoded(text, encoding, b"")
        kind = _suffix_type(name)
    if kind is not None:
        raise _not_text(label, kind)
    text = _decode_exact(data, "utf-8")
    if text is not None:
        return _decoded(text, "utf-8", b"")
    legacy = _legacy_decode(data)
    if legacy is None:
        raise _not_text(label, "binary data (not UTF-8 and no known text encoding fits)")
    return _decoded(legacy[0], legacy[1], b"")


def encoded_view(
    text: str, data: bytes, like: DecodedText, lines: int | None
) -> DecodedText | None:
    """What ``decode_text(data)`` returns for the bytes ``encode_text(text, like)`` just
    made, told without decoding them; None where that is not cheap to tell: any
    encoding but UTF-8, a start that sniffs as binary or as a byte order mark
    ``like`` did not write, or a CR in the text (its dominant line ending would
    take counting). ``lines``: the text's line count, when known."""
    if like.encoding != "utf-8" or "\r" in text:
        return None
    if utf8_text_start(data[:SNIFF_BYTES]) != len(like.bom):
        return None
    return DecodedText(text, "utf-8", like.bom, "\n", lines)


def utf8_text_start(head: bytes) -> int | None:
    """Where the text begins (after a UTF-8 byte order mark) if ``decode_text`` would
    call the file UTF-8, judging by its first ``SNIFF_BYTES`` bytes alone; None when
    it would not, or when only the whole file can tell.

    The caller must still find every byte after the start strict UTF-8, as
    ``decode_text`` does; a file that fails that is a legacy code page, which only
    a whole-file look decides. This follows ``decode_text``'s order: byte order
    marks first, then the binary sniff. UTF-8 is the one encoding handled here
    because its line breaks are the single bytes CR and LF and its validity can
    be checked a chunk at a time.
    """
    if head.startswith(codecs.BOM_UTF8):
        return len(codecs.BOM_UTF8)
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return None
    if _magic_type(head) is not None or b"\x00" in head[:SNIFF_BYTES]:
        return None
    return 0


def dominant_newline(counts: Mapping[str, int], first_index: Callable[[str], int]) -> str:
    """The line ending new lines should get: the most frequent of ``counts`` (keys
    "\\n", "\\r\\n", "\\r"), ties going to the one ``first_index`` places first;
    "\\n" for a file without line breaks."""
    best = max(counts.values())
    if best == 0:
        return "\n"
    tied = [ending for ending, count in counts.items() if count == best]
    return tied[0] if len(tied) == 1 else min(tied, key=first_index)


def first_ending_index(text: str, ending: str) -> int:
    """Where ``ending`` first occurs as a line ending of its own (a CR of a CRLF is not
    one), or ``len(text)``."""
    if ending == "\r\n":
        found = text.find("\r\n")
        return found if found >= 0 else len(text)
    match = re.search(r"(?<!\r)\n" if ending == "\n" else r"\r(?!\n)", text)
    return match.start() if match else len(text)


def has_escaped_bytes(text: str) -> bool:
    """Whether ``text`` carries undecodable bytes as surrogate escapes (``surrogateescape``)."""
    return _ESCAPED_BYTE.search(text) is not None


def encode_text(text: str, like: DecodedText) -> bytes:
    """Encode ``text`` the way ``like`` was stored: same encoding, same BOM.

    Plain UTF-8 is noted (``digest.note_utf8``): the audit log's digest of the
    same string, a write's content argument, is then the digest of these bytes.
    """
    try:
        data = like.bom + text.encode(like.encoding)
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        before = exc.object[: exc.start]
        line = before.count("\n") + before.count("\r") - before.count("\r\n") + 1
        column = exc.start - max(before.rfind("\n"), before.rfind("\r"))
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"The character {char!r} (U+{ord(char):04X}) at line {line}, column {column} "
            f"cannot be encoded in {like.encoding}, the encoding of this file.",
            f"Use only characters that exist in {like.encoding}, or an ASCII replacement.",
            details={"line": line, "column": column, "encoding": like.encoding},
        ) from exc
    if like.encoding == "utf-8" and not like.bom:
        note_utf8(text, data)
    return data


def detect_binary_type(data: bytes, name: str = "") -> str | None:
    """What binary content this looks like, from its first bytes; None if text-like.

    This is the cheap sniff (signatures, NUL bytes). ``decode_text`` is the
    authority: it may still refuse data this calls text-like.
    """
    if any(data.startswith(bom) for bom, _ in _BOMS):
        return None
    kind = _magic_type(data)
    if kind is not None:
        return kind
    if b"\x00" in data[:SNIFF_BYTES] and _bomless_utf16(data) is None:
        return _suffix_type(name)
    return None


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only on \\n, \\r\\n and \\r.

    ``str.splitlines`` also splits on form feeds, \\x1c-\\x1e and U+2028, which
    would make line numbers disagree with every editor and with ``grep``.
    """
    lines = text.splitlines(keepends=True)
    if len(lines) == line_count(text):  # no exotic separators: same split, faster
        return lines
    return _LINE.findall(text)


def line_contents(text: str, lines: list[str] | None = None) -> list[str]:
    """Each line of ``split_lines(text)`` without its ending (``lines``: that split,
    when the caller has it already).

    ``str.splitlines`` gives the same when it finds as many lines and the text does
    not end in a separator only it knows (``"y\\x0c"`` would lose its form feed)."""
    plain = text.splitlines()
    count = line_count(text) if lines is None else len(lines)
    if len(plain) == count and (not text or text[-1] not in _SPLITLINES_ONLY):
        return plain
    return [line.rstrip("\r\n") for line in (split_lines(text) if lines is None else lines)]


_SPLITLINES_ONLY = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""Line separators of ``str.splitlines`` that ``split_lines`` keeps inside a line."""


def count_breaks(text: str, start: int, end: int) -> int:
    """Line breaks (\\n, \\r\\n, \\r) completed in [start, end); a CRLF cut by
    ``end`` is not complete yet."""
    if end <= start:
        return 0
    count = text.count("\n", start, end)
    if text.find("\r", start, end) < 0:  # memchr: much cheaper than counting
        return count
    returns = text.count("\r", start, end)
    count += returns - text.count("\r\n", start, end)
    if text[end - 1] == "\r" and text[end : end + 1] == "\n":
        count -= 1
    return count


def line_count(text: str) -> int:
    """Number of lines ``split_lines`` would return, without building them."""
    breaks = text.count("\n")
    if "\r" in text:  # a memchr, far cheaper than the two counts it spares
        breaks += text.count("\r") - text.count("\r\n")
    return breaks + (1 if text and text[-1] not in "\r\n" else 0)


_NOT_TEXT_HINT = "This tool works on text files only; do not try to read or edit this file as text."


def _not_text(label: str, kind: str) -> ToolError:
    return ToolError(
        ErrorCode.NOT_TEXT,
        f"{label} is not a text file: it looks like {kind}.",
        _NOT_TEXT_HINT,
        details={"detected": kind},
    )


def _decoded(text: str, encoding: str, bom: bytes) -> DecodedText:
    return DecodedText(text=text, encoding=encoding, bom=bom, newline=_dominant_newline(text))


def _dominant_newline(text: str) -> str:
    if "\r" not in text:
        return "\n"
    crlf = text.count("\r\n")
    counts = {
        "\n": text.count("\n") - crlf,
        "\r\n": crlf,
        "\r": text.count("\r") - crlf,
    }
    return dominant_newline(counts, lambda ending: first_ending_index(text, ending))


def _decode_exact(data: bytes, encoding: str) -> str | None:
    """The decoded text if it re-encodes to exactly ``data``, else None."""
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    if encoding == "utf-8" or encoding in _BYTE_FOR_BYTE:  # a strict decode round-trips
        return text
    try:
        same = text.encode(encoding) == data
    except UnicodeEncodeError:
        return None
    return text if same else None


def _magic_type(data: bytes) -> str | None:
    """The kind of binary data ``data`` starts like, or None. Text, which starts
    with none of the signatures, is told so by two C calls (the signatures at each
    offset at once, the patterns as one alternation); only data that starts like
    one looks for which, in ``_MAGIC``'s order."""
    if any(data.startswith(signatures, offset) for offset, signatures in _MAGIC_BY_OFFSET):
        for offset, signature, kind in _MAGIC:
            if data.startswith(signature, offset):
                return kind
    found = _ANY_PATTERN_MAGIC.match(data, 0, 64)
    return None if found is None else _PATTERN_MAGIC[found.lastindex - 1][1]


def _suffix_type(name: str) -> str:
    dot = name.rfind(".")
    return _BINARY_SUFFIXES.get(name[dot:].lower(), "binary data") if dot > 0 else "binary data"


def _bomless_utf16(data: bytes) -> str | None:
    """The codec when NUL-containing data starts like UTF-16 text without a BOM.

    ASCII-heavy UTF-16 has a NUL in most of one half of the bytes and almost none
    in the other; which half holds them gives the byte order. The decoded start
    must look like prose: no control characters, no unassigned or private-use
    code points. Only the first 8 KB
    are judged, so callers may pass just the head of a file.
    """
    if len(data) % 2:
        return None
    sample = data[:SNIFF_BYTES]
    odd = sample[1::2].count(0)
    even = sample[0::2].count(0)
    half = len(sample) // 2
    if max(odd, even) < 0.4 * half or min(odd, even) > 0.05 * half:
        return None
    encoding = "utf-16-le" if odd >= even else "utf-16-be"
    try:
        head = codecs.getincrementaldecoder(encoding)().decode(sample, final=False)
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(head):
        return None
    if any(unicodedata.category(char) in ("Cn", "Co", "Cs") for char in set(head)):
        return None
    return encoding


def _legacy_decode(data: bytes) -> tuple[str, str] | None:
    """Text and codec for bytes that are not UTF-8: a Western code page unless there
    is strong evidence for another.

    Short Western texts decode "cleanly" in dozens of code pages (cp775, cp437,
    hp-roman8, even cp932), so a detector's ranking is no evidence; only a
    decoding whose non-ASCII letters nearly all belong to one other script (CJK,
    Cyrillic, Greek, ...) beats cp1252 (latin-1 where cp1252 leaves a byte
    undefined). Only decodings that reproduce the bytes exactly count, and edits
    splice new lines into the original bytes, so a wrong guess can at worst touch
    the lines that change.
    """
    western_name = "cp1252"
    western = _decode_exact(data, western_name)
    if western is None:
        western_name, western = "latin-1", data.decode("latin-1")
    best = None if _western_for_sure(data) else charset_normalizer.from_bytes(data).best()
    if best is not None:
        encoding = _codec_name(best.encoding)
        text = _decode_exact(data, encoding) if encoding not in _WESTERN else None
        needed = _MIN_LETTERS_MULTIBYTE if encoding in _MULTIBYTE else _MIN_LETTERS_SINGLE_BYTE
        if text is not None and _one_other_script(text, needed):
            return text, encoding
    # A Western code page decodes each byte to one character, the control characters
    # counted here from the ASCII bytes of the same code: they are counted on the bytes.
    scored = data[:_SCORED_CHARS]
    if len(scored) - len(scored.translate(None, _CONTROL_BYTES)) > len(scored) // 200:
        return None  # control characters throughout: binary, not a Western text
    return western, western_name


def _ascii_prefix_length(data: bytes) -> int:
    """How many bytes ``data`` starts with that are ASCII."""
    try:
        data.decode("ascii")
    except UnicodeDecodeError as exc:
        return exc.start
    return len(data)


def _western_for_sure(data: bytes) -> bool:
    """Whether no decoding the detector could propose would pass ``_one_other_script``,
    so asking it (milliseconds for a source file) cannot change the answer.

    Every non-ASCII letter takes at least one byte of 0x80 or more in the code pages
    meant here (ASCII-compatible ones): with fewer such bytes than a single-byte code
    page needs letters, only the multi-byte ones, which need fewer, could pass, and
    those are tried directly. A file with a stray accented letter in a comment, the
    usual legacy-encoded source file, is decided without the detector.
    """
    if len(data.translate(None, _ASCII_BYTES)) >= _MIN_LETTERS_SINGLE_BYTE:
        return False
    # These codecs decode (and encode back) each ASCII byte outside a multi-byte
    # sequence as itself, and every sequence starts with a byte of 0x80 or more: the
    # ASCII start of the file reads the same in all of them, so only the rest from
    # the first such byte is decoded, and its letters scored where the whole text's
    # scored window would hold them.
    start = _ascii_prefix_length(data)
    room = max(_SCORED_CHARS - start, 0)
    rest = data[start:]
    for encoding in _MULTIBYTE:
        text = _decode_exact(rest if encoding in _ASCII_STABLE else data, encoding)
        if text is None:
            continue
        scored = text[:room] if encoding in _ASCII_STABLE else text
        if _one_other_script(scored, _MIN_LETTERS_MULTIBYTE):
            return False
    return True


def _one_other_script(text: str, needed: int) -> bool:
    """Whether the text's non-ASCII letters are (nearly) all of one non-Latin script."""
    scripts: dict[str, int] = {}
    for char in "".join(_NON_ASCII.findall(text[:_SCORED_CHARS])):
        if not char.isalpha():
            continue
        script = unicodedata.name(char, "UNKNOWN").split(" ")[0]
        script = "CJK" if script in _EAST_ASIAN else script
        scripts[script] = scripts.get(script, 0) + 1
    total = sum(scripts.values())
    if total < needed:
        return False
    script, count = max(scripts.items(), key=lambda item: item[1])
    return script not in ("LATIN", "UNKNOWN") and count >= _SCRIPT_SHARE * total


def _mixed_script_words(text: str) -> int:
    """Words with ASCII letters and non-Latin letters together, a sign of a wrong code page."""
    count = 0
    for word in _WORD.findall(text[:_SCORED_CHARS]):
        if word.isascii() or not any(char.isascii() for char in word):
            continue
        if any(
            not char.isascii() and not unicodedata.name(char, "").startswith("LATIN")
            for char in word
        ):
            count += 1
    return count


def _codec_name(encoding: str) -> str:
    name = codecs.lookup(encoding).name
    return "latin-1" if name == "iso8859-1" else name


def _preference(encoding: str) -> int:
    name = codecs.lookup(encoding).name
    return _PREFERRED_LEGACY.index(name) if name in _PREFERRED_LEGACY else len(_PREFERRED_LEGACY)
