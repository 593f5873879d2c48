"""_elf.py - the C name prefixes a shared library's exported symbols name.

A built artifact's functions are PREFIX_tdsl_describe, PREFIX_forward, ...
where PREFIX is the file's stem unless `tdsl build --name` chose another or
the file was renamed.  The prefix is then read from the library's dynamic
symbol table: every defined symbol ending in _tdsl_describe.  Only 64-bit
little-endian ELF (what tdsl builds); anything else gives no prefix.
"""
import struct

_SUFFIX = b"_tdsl_describe"
_SHT_DYNSYM = 11


def describe_prefixes(path):
    """The PREFIXes of the PREFIX_tdsl_describe symbols path defines ([] when
    it is not an ELF64 little-endian file or has none)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return []
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data):
        return []
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    found = []
    for _, kind, _, _, off, size, link, _, _, entsize in sections:
        if kind != _SHT_DYNSYM or link >= shnum or entsize < 24:
            continue
        str_off, str_size = sections[link][4], sections[link][5]
        strtab = data[str_off:str_off + str_size]
        for at in range(off, min(off + size, len(data) - 23), entsize):
            name_at, _, _, shndx = struct.unpack_from("<IBBH", data, at)
            end = strtab.find(b"\0", name_at)
            name = strtab[name_at:end] if end >= 0 else b""
            if shndx != 0 and name.endswith(_SUFFIX) and len(name) > len(_SUFFIX):
                found.append(name[:-len(_SUFFIX)].decode("ascii", "replace"))
    return found
