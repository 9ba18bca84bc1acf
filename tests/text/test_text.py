from __future__ import annotations

import codecs
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.text import codec as text_module
from tinyagent_fs.text.codec import (
    DecodedText,
    decode_text,
    detect_binary_type,
    encode_text,
    encoded_view,
    line_contents,
    line_count,
    split_lines,
    utf8_text_start,
)

ROUND_TRIPS = {
    "utf-8": "héllo wörld ✓\nsecond line\n".encode(),
    "utf-8 bom": codecs.BOM_UTF8 + "naïve\r\ncafé\r\n".encode(),
    "utf-16-le bom": codecs.BOM_UTF16_LE + "line one ✓\r\nline two\r\n".encode("utf-16-le"),
    "utf-16-be bom": codecs.BOM_UTF16_BE + "line one ✓\nline two".encode("utf-16-be"),
    "utf-32-le bom": codecs.BOM_UTF32_LE + "wide 𝄞 text\n".encode("utf-32-le"),
    "utf-16-le no bom": "plain ascii as utf-16\nand more\n".encode("utf-16-le"),
    "latin-1": "Größe, façade, señor: naïve café.\n".encode("latin-1"),
    "cp1252": "“Smart quotes” — and a euro € sign.\n".encode("cp1252"),
    "shift_jis": "こんにちは、世界。日本語のテキストです。\r\n".encode("shift_jis"),
    "crlf": b"a\r\nb\r\nc\r\n",
    "mixed endings": b"unix\nwindows\r\nold mac\rend",
    "no final newline": b"first\nlast",
    "empty": b"",
    "nul-free control chars": b"bell \x07 and escape \x1b[0m\n",
}


@pytest.mark.parametrize("data", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_accepted_text_round_trips_byte_for_byte(data: bytes) -> None:
    decoded = decode_text(data)
    assert encode_text(decoded.text, decoded) == data


def test_utf8_bom_is_stripped_and_restored() -> None:
    decoded = decode_text(codecs.BOM_UTF8 + b"x = 1\n")
    expected = DecodedText(text="x = 1\n", encoding="utf-8", bom=codecs.BOM_UTF8, newline="\n")
    assert decoded == expected


def test_utf16_with_bom_is_decoded() -> None:
    decoded = decode_text(codecs.BOM_UTF16_LE + "é\r\n".encode("utf-16-le"))
    assert (decoded.text, decoded.encoding, decoded.bom) == ("é\r\n", "utf-16-le", b"\xff\xfe")
    assert decoded.newline == "\r\n"


def test_bomless_utf16_is_recognised_not_called_binary() -> None:
    data = "hello\nworld\n".encode("utf-16-be")
    assert detect_binary_type(data) is None
    decoded = decode_text(data)
    assert (decoded.text, decoded.encoding, decoded.bom) == ("hello\nworld\n", "utf-16-be", b"")


def test_legacy_encodings_decode_to_the_right_characters() -> None:
    for western in ("façade\n", "Größe, façade, señor.\n", "crème brûlée\n"):
        decoded = decode_text(western.encode("latin-1"))
        assert decoded.text == western
        assert decoded.encoding in ("cp1252", "latin-1")
    russian = "Привет, мир! Это обычный текст.\n"
    assert decode_text(russian.encode("cp1251")).text == russian
    japanese = "こんにちは、世界。日本語のテキストです。\n"
    decoded = decode_text(japanese.encode("shift_jis"))
    assert decoded.text == japanese
    assert decoded.encoding in ("shift_jis", "cp932")


def test_empty_bytes_are_empty_utf8() -> None:
    assert decode_text(b"") == DecodedText(text="", encoding="utf-8", bom=b"", newline="\n")


def test_line_endings_are_kept_and_the_dominant_one_reported() -> None:
    decoded = decode_text(b"a\r\nb\r\nc\n")
    assert decoded.text == "a\r\nb\r\nc\n"
    assert decoded.newline == "\r\n"
    assert decode_text(b"a\rb\rc").newline == "\r"
    assert decode_text(b"no break").newline == "\n"
    assert decode_text(b"tie\r\nfirst\nwins").newline == "\r\n"


def test_edited_text_is_encoded_like_the_original() -> None:
    decoded = decode_text(codecs.BOM_UTF16_BE + "old\r\n".encode("utf-16-be"))
    assert encode_text("new\r\n", decoded) == codecs.BOM_UTF16_BE + "new\r\n".encode("utf-16-be")


def test_unencodable_character_is_refused_with_its_position() -> None:
    decoded = decode_text("façade\n".encode("latin-1"))
    with pytest.raises(ToolError) as caught:
        encode_text("façade\nsmile ☺ here\n", decoded)
    error = caught.value
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert "U+263A" in error.message and "line 2, column 7" in error.message
    assert decoded.encoding in error.message
    assert error.details["line"] == 2


def test_lone_surrogate_cannot_be_written_as_utf8() -> None:
    with pytest.raises(ToolError) as caught:
        encode_text("bad \ud800", decode_text(b""))
    assert "U+D800" in caught.value.message


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
BINARIES = {
    "PNG image": PNG,
    "JPEG image": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "GIF image": b"GIF89a\x01\x00\x01\x00",
    "PDF document": b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
    "ELF executable": b"\x7fELF\x02\x01\x01\x00" + bytes(8),
    "ZIP archive": b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
    "gzip archive": b"\x1f\x8b\x08\x00" + zlib.compress(b"x"),
    "SQLite database": b"SQLite format 3\x00\x10\x00\x01\x01",
    "WebP image": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "WAV audio": b"RIFF\x24\x00\x00\x00WAVEfmt ",
    "AVI video": b"RIFF\x24\x00\x00\x00AVI LIST",
    "MP4/QuickTime media": b"\x00\x00\x00\x18ftypmp42",
    "bzip2 archive": b"BZh91AY&SY\x00\x01",
    "BMP image": b"BM\x36\x00\x0c\x00\x00\x00\x00\x00\x36\x00",
    "Python pickle": b"\x80\x04\x95\x05\x00\x00\x00",
    "Windows executable": b"MZ\x90\x00\x03\x00\x00\x00",
    "tar archive": b"notes.txt" + bytes(248) + b"ustar\x0000",
}


@pytest.mark.parametrize(("kind", "data"), BINARIES.items(), ids=BINARIES.keys())
def test_binary_formats_are_named(kind: str, data: bytes) -> None:
    assert detect_binary_type(data) == kind
    with pytest.raises(ToolError) as caught:
        decode_text(data, "thing.bin")
    assert caught.value.code is ErrorCode.NOT_TEXT
    assert kind in caught.value.message
    assert "'thing.bin'" in caught.value.message
    assert caught.value.details["detected"] == kind


def test_random_bytes_with_nuls_are_binary_data() -> None:
    data = random.Random(7).randbytes(4096) + b"\x00\x00"
    assert detect_binary_type(data) == "binary data"
    with pytest.raises(ToolError) as caught:
        decode_text(data)
    assert "binary data" in caught.value.message


def test_nul_bytes_make_even_valid_utf8_binary() -> None:
    data = b"ab\x00\x01\x02\x03\x00cd\x00"
    assert detect_binary_type(data, "module.pyc") == "Python bytecode"
    with pytest.raises(ToolError):
        decode_text(data)


def test_undecodable_bytes_without_nuls_are_refused() -> None:
    data = bytes(b for b in random.Random(3).randbytes(4096) if b)
    with pytest.raises(ToolError) as caught:
        decode_text(data)
    assert caught.value.code is ErrorCode.NOT_TEXT


def test_invalid_utf16_after_bom_is_refused() -> None:
    with pytest.raises(ToolError) as caught:
        decode_text(codecs.BOM_UTF16_LE + b"\x00\xd8")
    assert "utf-16-le" in caught.value.message


def test_plain_text_is_not_binary() -> None:
    assert detect_binary_type(b"print('hello')\n") is None
    assert detect_binary_type(b"let ftype = 1;\n") is None
    assert detect_binary_type(b"") is None


def test_split_lines_keeps_endings_and_only_splits_on_newlines() -> None:
    text = "a\r\nb\nc\rd\x0ce\u2028f\x1cg\x0bh\x85i"
    assert split_lines(text) == ["a\r\n", "b\n", "c\r", "d\x0ce\u2028f\x1cg\x0bh\x85i"]
    assert split_lines("") == []
    assert split_lines("x\n") == ["x\n"]
    assert split_lines("\n\n") == ["\n", "\n"]
    assert split_lines("\r\r\n") == ["\r", "\r\n"]


def test_line_count_matches_split_lines() -> None:
    for text in ("", "x", "x\n", "a\r\nb", "a\rb\r", "\n\n\r\n", "p\x0cq\u2028r"):
        assert line_count(text) == len(split_lines(text)), text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_split_lines_rejoins_to_the_original(text: str) -> None:
    lines = split_lines(text)
    assert "".join(lines) == text
    assert line_count(text) == len(lines)
    for line in lines:
        body = line.rstrip("\r\n")
        assert "\n" not in body and "\r" not in body
        assert line == body or line[len(body) :] in ("\n", "\r\n", "\r")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_refused_or_round_trip(data: bytes) -> None:
    try:
        decoded = decode_text(data)
    except ToolError as error:
        assert error.code is ErrorCode.NOT_TEXT
        return
    assert encode_text(decoded.text, decoded) == data


TEXT_STARTS = st.sampled_from(
    [b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF32_BE, b"%PDF-", b"\x89PNG\r\n\x1a\n"]
)


@settings(max_examples=400, deadline=None)
@given(
    start=TEXT_STARTS,
    body=st.one_of(
        st.binary(max_size=60),
        st.text(max_size=40).map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.text(max_size=30).map(lambda text: text.encode("utf-16-le", "surrogatepass")),
    ),
)
def test_the_utf8_verdict_on_a_file_start_agrees_with_decode_text(
    start: bytes, body: bytes
) -> None:
    """What a window read decides from the first bytes plus a strict UTF-8 check of
    the rest is exactly when ``decode_text`` decodes the whole file as UTF-8."""
    data = start + body
    text_start = utf8_text_start(data[:8192])
    try:
        decoded = decode_text(data)
    except ToolError:
        decoded = None
    is_utf8 = decoded is not None and decoded.encoding == "utf-8"
    rest_valid = text_start is not None and _is_utf8(data[text_start:])
    assert rest_valid == is_utf8
    if is_utf8:
        assert decoded is not None and len(decoded.bom) == text_start


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize(
    "western",
    [
        "caf\u00e9\r\n",  # once read as cp932 or cp775
        "Gr\u00f6\u00dfe \u00e0 la cr\u00e8me\n",
        "price:\u00a0100\u00a0\u20ac, \u201cquoted\u201d \u2013 done\n",  # cp1252 only
        "na\u00efve r\u00e9sum\u00e9 \u00bd \u00b0C\n",
    ],
)
def test_western_text_is_read_as_cp1252_not_a_lookalike_code_page(western: str) -> None:
    try:
        data = western.encode("cp1252")
    except UnicodeEncodeError:
        data = western.encode("latin-1")
    decoded = decode_text(data)
    assert decoded.text == western
    assert decoded.encoding in ("cp1252", "latin-1")


def test_a_patched_nbsp_stays_an_nbsp() -> None:
    decoded = decode_text("a\u00a0b = 1\nc = 2\n".encode("latin-1"))
    changed = decoded.text.replace("c = 2", "c = 3")
    assert encode_text(changed, decoded) == "a\u00a0b = 1\nc = 3\n".encode("latin-1")


NEARLY_ASCII = {
    "latin-1 comment": "# Copyright (c) 2001 Fran\u00e7ois\nx = 1\n".encode("latin-1"),
    "latin-1, two accents": b"# caf\xe9 \xa0\nprint('hi')\n",
    "cp1252 quotes": "say \u201chi\u201d\n".encode("cp1252"),
    "seven accents": "\u00e9\u00e8\u00ea\u00eb\u00e0\u00e2\u00e4 ok\n".encode("latin-1"),
    "two kana": "\uff71\uff72 kana\n".encode("shift_jis"),
    "one kanji": "\u65e5 one\n".encode("shift_jis"),
    "two kanji": "\u65e5\u672c two\n".encode("shift_jis"),
    "three hanzi gbk": "\u4e2d\u6587\u5b57\n".encode("gbk"),
    "two hangul": "\ud55c\uae00\n".encode("euc_kr"),
    "three cyrillic": "\u043c\u0438\u0440 x\n".encode("cp1251"),
    "big5 pair": "\u4e2d\u6587\n".encode("big5"),
}


@pytest.mark.parametrize("data", NEARLY_ASCII.values(), ids=NEARLY_ASCII.keys())
def test_a_nearly_ascii_legacy_file_decodes_as_the_detector_would_decide(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files with a few non-ASCII bytes skip the (slow) detector when it cannot change
    the answer; the answer is the one asking it gives."""
    quick = decode_text(data)
    monkeypatch.setattr(text_module, "_western_for_sure", lambda data: False)
    assert decode_text(data) == quick
    assert encode_text(quick.text, quick) == data


def _western_for_sure_whole_file(data: bytes) -> bool:
    """``_western_for_sure`` as it was before it skipped the ASCII start: every
    multi-byte codec decodes the whole file."""
    if len(data.translate(None, bytes(range(128)))) >= text_module._MIN_LETTERS_SINGLE_BYTE:
        return False
    for encoding in text_module._MULTIBYTE:
        text = text_module._decode_exact(data, encoding)
        if text is not None and text_module._one_other_script(
            text, text_module._MIN_LETTERS_MULTIBYTE
        ):
            return False
    return True


ASCII_START = b"x = 1  # plain ASCII\n" * 4000
"""84,000 bytes: longer than the scored window of 65,536 characters."""


@pytest.mark.parametrize(
    "data",
    [
        *NEARLY_ASCII.values(),
        *(ASCII_START[:3000] + value for value in NEARLY_ASCII.values()),
        *(ASCII_START + value for value in NEARLY_ASCII.values()),
        ASCII_START[:65530] + "\u65e5\u672c two\n".encode("shift_jis"),
        "\u65e5 one\n".encode("shift_jis") + ASCII_START + "\u672c\n".encode("shift_jis"),
        b"\x8f\xa2",  # a lead byte at the very end
        b"plain ascii only\n",
    ],
)
def test_skipping_the_ascii_start_decides_as_decoding_the_whole_file(data: bytes) -> None:
    """Only the bytes from the first non-ASCII one are decoded, letters scored where
    the whole text's window would hold them: the answer is the whole-file one."""
    assert text_module._western_for_sure(data) == _western_for_sure_whole_file(data)


@given(st.binary(max_size=64))
@settings(max_examples=300, deadline=None)
def test_skipping_the_ascii_start_agrees_on_any_bytes(tail: bytes) -> None:
    for data in (tail, b"a = 1\n" * 5 + tail):
        assert text_module._western_for_sure(data) == _western_for_sure_whole_file(data)


@pytest.mark.parametrize("encoding", sorted(text_module._BYTE_FOR_BYTE))
def test_a_byte_for_byte_code_page_round_trips_every_byte_it_decodes(encoding: str) -> None:
    """The re-encode check is skipped only for code pages where it cannot fail."""
    data = bytes(b for b in range(256) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D))
    text = text_module._decode_exact(data, encoding)
    assert text is not None and text.encode(encoding) == data
    assert text_module._decode_exact(b"ok \x81", encoding) is None


def test_control_characters_throughout_still_make_a_legacy_file_binary() -> None:
    data = (b"\x01\x02\x03 caf\xe9 " * 200)[:4000]
    with pytest.raises(ToolError) as caught:
        decode_text(data)
    assert caught.value.code is ErrorCode.NOT_TEXT


@pytest.mark.parametrize(
    "text", ["", "a", "a\n", "y\x0c", "\x0c", "a\x0cb\n", "x\r\ny\rz\x85", "a\u2028b", "a\n\x0c"]
)
def test_line_contents_are_split_lines_without_endings(text: str) -> None:
    expected = [line.rstrip("\r\n") for line in split_lines(text)]
    assert line_contents(text) == expected
    assert line_contents(text, split_lines(text)) == expected


VIEW_PIECES = st.sampled_from(
    ["a", "é", "\n", "\r", "\r\n", "\x00", "\ufeff", "%PDF-1.7\n", "\x7fELF", "PK\x03\x04", "\x0c"]
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(VIEW_PIECES | st.text(max_size=5), max_size=12),
    bom=st.booleans(),
)
def test_encoded_view_is_what_decoding_the_written_bytes_gives(
    pieces: list[str], bom: bool
) -> None:
    text = "".join(pieces)
    like = DecodedText("", "utf-8", codecs.BOM_UTF8 if bom else b"", "\n")
    try:
        data = encode_text(text, like)
    except ToolError:  # a lone surrogate: nothing is written, nothing to view
        return
    view = encoded_view(text, data, like, line_count(text))
    if view is None:
        return
    assert view == decode_text(data)
    assert view.lines == len(split_lines(decode_text(data).text))


@pytest.mark.parametrize(
    ("text", "bom", "expected"),
    [
        ("plain\ntext\n", b"", True),
        ("plain\ntext\n", codecs.BOM_UTF8, True),
        ("\ufeffstarts with a mark\n", b"", False),  # the bytes now start with a BOM
        ("nul\x00inside\n", b"", False),  # sniffed as binary, or as UTF-16
        ("%PDF-1.7\n", b"", False),  # a signature
        ("crlf\r\ntext\r\n", b"", False),  # its dominant ending would take counting
    ],
)
def test_encoded_view_is_given_only_where_it_is_certain(
    text: str, bom: bytes, expected: bool
) -> None:
    like = DecodedText("", "utf-8", bom, "\n")
    view = encoded_view(text, encode_text(text, like), like, None)
    assert (view is not None) is expected


def test_encoded_view_is_none_for_other_encodings() -> None:
    like = DecodedText("", "cp1252", b"", "\n")
    assert encoded_view("plain\n", b"plain\n", like, 1) is None
