"""Files a program writes through an option or a naming rule of its own, read for
``agent.shell_writes``: the log or output file of a wrapper that runs another command
(``time -o``, ``strace -o``, ``ltrace -o``, ``valgrind --log-file=``, ``perf … -o``,
``script FILE``, the lock file ``flock FILE`` creates), what a compressor writes and takes away
(``gzip F`` writes ``F.gz`` and removes ``F``; ``gunzip F.gz`` writes ``F``), the files
``chmod``/``chown``/``chgrp`` change, the link ``link A B`` makes, the FIFO ``mkfifo`` makes,
the archive ``zip`` writes, an awk program's ``print > "FILE"``, a download's
``curl -o FILE`` (or its URL's last segment: ``curl -O URL``, ``wget URL``), ``openssl … -out FILE``, ``gpg -o FILE`` and the key ``ssh-keygen -f FILE``
makes (and ``FILE.pub``), the folders ``mkdir`` makes, the name ``mktemp TEMPLATE`` makes. Before, each of these wrote past a ``Write(…)`` deny rule in ``yolo`` (and a
memory file in ``ci``): the check read none of these words as a write.
"""

from __future__ import annotations

import re
import string
from pathlib import PurePosixPath

from agent.archive_writes import SEVEN_ZIP, archive_folder, archive_written
from agent.made_names import Made
from agent.rename_writes import RENAMERS, renamed
from agent.shell_programs import awk_writes
from agent.shell_wrappers import long_option, unwrap

# Wrappers' options whose value is a file they write (short ones also with the value attached).
_WRAPPER_FILES: dict[str, set[str]] = {
    "time": {"-o", "--output"},
    "strace": {"-o", "--output"},
    "ltrace": {"-o", "--output"},
    "valgrind": {"--log-file", "--xml-file"},
    "perf": {"-o", "--output"},
    "script": {"-O", "--log-out", "-I", "--log-in", "-B", "--log-io", "-T", "--log-timing"},
    "ssh-agent": {"-a"},  # the socket it binds
}
# Compressors: (suffix, whether they keep the input file unless told otherwise).
_PACKERS = {
    "gzip": (".gz", False), "pigz": (".gz", False), "bzip2": (".bz2", False),
    "pbzip2": (".bz2", False), "xz": (".xz", False), "lzma": (".lzma", False),
    "lzip": (".lz", False), "zstd": (".zst", True), "lz4": (".lz4", True),
    "brotli": (".br", True), "lzop": (".lzo", True), "compress": (".Z", False),
}  # fmt: skip
_UNPACKERS = {"gunzip": "gzip", "unpigz": "pigz", "bunzip2": "bzip2", "unxz": "xz",
              "unlzma": "lzma", "unzstd": "zstd", "unlz4": "lz4", "uncompress": "compress"}  # fmt: skip
# Their options that take a value, and those that write nothing (to stdout, a test, a list).
_PACKER_VALUES = {"-S", "--suffix", "-o", "--output", "-b", "-p", "--processes", "-T",
                  "--threads", "-M", "--memlimit", "-D", "--dict", "--format", "-F"}  # fmt: skip
_PACKER_NO_WRITE = {"-c", "--stdout", "--to-stdout", "-t", "--test", "-l", "--list", "-h",
                    "--help", "-V", "--version", "-L", "--license"}  # fmt: skip
_KNOWN_SUFFIXES = (".gz", ".tgz", ".z", ".bz2", ".tbz2", ".xz", ".txz", ".lzma", ".lz", ".zst",
                   ".lz4", ".br", ".lzo", ".Z", "-gz", "_z", "-z")  # fmt: skip


def option_writes(name: str, args: list[str]) -> list[str]:
    """The files ``name ARGS`` writes by an option or a rule of its own ([] when none)."""
    if name in _WRAPPER_FILES:
        own = args[: len(args) - len(unwrap(name, args) or [])]  # before the command it runs
        out = _values(own, _WRAPPER_FILES[name])
        if name == "script":  # `script [options] [FILE]`: the typescript
            operands = [a for a in _operands(args, _SCRIPT_VALUES)]
            out += operands[:1] if operands else ["typescript"]
        if name == "perf" and own[:1] == ["record"] and not out:
            out.append("perf.data")
        return out
    if name == "flock":  # `flock FILE cmd` opens FILE, creating it
        operands = _operands(args, {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"})
        return operands[:1]
    if name in _PACKERS or name in _UNPACKERS:
        return _packed(name, args)
    if name in _DOWNLOADERS:  # `curl -sSfLo FILE URL`, `wget -qO FILE URL`
        letter, long, valued = _DOWNLOADERS[name]
        found = _values(args, {long}) + _in_bundle(args, letter, valued)
        return [v for v in found if v != "-"] + _remote_names(name, args)
    if name in RENAMERS:  # the files it renames and their new names (``agent.rename_writes``)
        return renamed(name, args)[0]
    if name in ("awk", "gawk", "mawk", "nawk"):  # `print > "FILE"`
        return awk_writes(args)
    if name in ("chmod", "chown", "chgrp"):  # the mode or owner first, unless `--reference=`
        mode = name == "chmod" and any(re.fullmatch(r"-[rwxXst]+", a) for a in args)
        operands = _operands([a for a in args if not mode or not re.fullmatch("-[rwxXst]+", a)],
                             set())  # fmt: skip
        by_reference = mode or any(a.startswith("--reference") for a in args)
        return operands if by_reference else operands[1:]
    if name in ("rm", "unlink", "rmdir"):  # what it removes, as `mv` takes its sources away
        return _operands(args, set())
    if name in ("sponge", "shred"):  # `… | sponge F` writes F; `shred -u F` overwrites, removes
        return _operands(args, {"-n", "--iterations", "-s", "--size", "--random-source"})
    if name in ("link", "mkfifo", "mknod"):  # `link OLD NEW`, `mkfifo F`, `mknod F p`
        operands = _operands(args, {"-m", "--mode", "-Z", "--context"})
        return operands[1:2] if name == "link" else operands[:1]
    if name == "openssl":  # `openssl genrsa -out F`, `openssl req … -keyout K -out C`
        return [b for a, b in zip(args, args[1:], strict=False) if a in _OPENSSL_FILES]
    if name in ("gpg", "gpg2"):  # `gpg -o F -d x.gpg`, `gpg --output=F …`
        return [v for v in _values(args, {"-o", "--output"}) if v != "-"]
    if name == "ssh-keygen":  # `ssh-keygen -f F` writes the key F and F.pub
        return _ssh_keygen(args)
    if name == "mkdir":  # `mkdir -p a/b` makes a and a/b
        operands = _operands(args, {"-m", "--mode"})
        parents = any(re.fullmatch(r"-[a-zA-Z]*p[a-zA-Z]*", a) for a in args) or any(
            a.startswith("--pa") for a in args)  # fmt: skip
        return [p for o in operands for p in (_parents(o) if parents else [o])]
    if name == "cpio" or name in SEVEN_ZIP:  # `cpio -o -F F`, `7z a F.7z …`
        return archive_written(name, args)
    if name == "zip":  # `zip [options] ARCHIVE FILES…`
        operands = _operands(args, {"-b", "-n", "-t", "-tt", "-x", "-i", "-O", "--out", "-P"})
        archive = operands[:1] + [f"{o}.zip" for o in operands[:1] if not PurePosixPath(o).suffix]
        return _values(args, {"-O", "--out"}) + archive
    return []


def option_made(name: str, args: list[str]) -> list[Made]:
    """The names a program makes that its line spells only in part (``agent.made_names``):
    ``mktemp DIR/tmp.XXXXXX.yml`` makes ``DIR/tmp.`` + six letters or digits + ``.yml``;
    ``chmod -R``/``chown -R``/``chgrp -R`` change any name below each folder."""
    recursive = any(re.fullmatch(r"-[a-zA-Z]*R[a-zA-Z]*", a) for a in args) or any(
        long_option(a.partition("=")[0], {"--recursive"}) == "--recursive" for a in args)  # fmt: skip
    if name in ("chmod", "chown", "chgrp") and recursive:  # `chmod -R 600 DIR`: any name there
        return [Made(f"{f.rstrip('/')}/", unlisted=True) for f in option_writes(name, args)]
    if name == "rm" and (recursive or any(re.fullmatch(r"-[a-zA-Z]*r[a-zA-Z]*", a) for a in args)):
        return [Made(f"{f.rstrip('/')}/", unlisted=True) for f in option_writes(name, args)]
    folder = archive_folder(name, args)  # `cpio -i`, `7z x -oDIR`: any name there
    if folder is not None:
        return [Made(f"{folder.rstrip('/')}/" if folder not in (".", "./") else "", unlisted=True)]
    if name in _DOWNLOADERS and _download(name, args)[2]:  # `wget -r`, `curl -OJ`
        return [Made(f"{_download(name, args)[0].rstrip('/')}/", unlisted=True)]
    if name in _DOWNLOADERS and (name == "wget" or "--no-clobber" in args):
        # `wget URL` when the file is there already saves NAME.1, NAME.2…
        return [Made(f"{p}.", "", string.digits) for p in _remote_names(name, args)]
    if name != "mktemp" or any(re.fullmatch(r"-[a-zA-Z]*u[a-zA-Z]*", a) or a.startswith("--dr")
                               for a in args):  # fmt: skip
        return []  # `-u`, `--dry-run`: a name only
    operands = _operands(args, {"-p", "--suffix"})
    folders = _values(args, {"-p"}) + [a.partition("=")[2] for a in args
                                       if a.startswith("--tm") and "=" in a]  # fmt: skip
    in_tmp = any(a == "-t" or a.startswith("--tm") and "=" not in a for a in args)
    if not operands or (in_tmp and not folders):
        return []  # under $TMPDIR (or /tmp)
    template = operands[-1]
    template = template if not folders else f"{folders[-1].rstrip('/')}/{template}"
    xs = re.search(r"X{3,}(?=[^X/]*$)", template)
    if xs is None:
        return []  # mktemp refuses it
    suffix = template[xs.end() :] + "".join(_values(args, {"--suffix"})[-1:])
    return [Made(template[: xs.start()], suffix, string.ascii_letters + string.digits)]


def _parents(path: str) -> list[str]:
    """``a``, ``a/b`` and ``a/b/c`` (the folders ``mkdir -p`` may make)."""
    out, pure = [], PurePosixPath(path)
    while str(pure) not in (".", "/", "..") and pure.name not in ("", ".."):
        out.append(str(pure))
        pure = pure.parent
    return out[::-1] or [path]


# The letter and long option naming the file a download is saved to, and the short options
# that take a value (a bundle ends at one): `curl -sSfLo F`, `wget -qO F`.
_DOWNLOADERS = {
    "curl": ("o", "--output", "odeEHuxXAbcrTyYzKwmDC"),
    "wget": ("O", "--output-document", "oOaeiBtTwQPUDXIlAR"),
}


_REMOTE = {"--remote-name", "--remote-name-all", "--output-dir", "--directory-prefix",
           "--output-document", "--recursive", "--mirror", "--page-requisites",
           "--force-directories", "--content-disposition", "--input-file", "--remote-header-name",
           "--protocol-directories"}  # fmt: skip


def _download(name: str, args: list[str]) -> tuple[str, bool, bool]:
    """(the folder a download lands in, whether it is named after its URL, whether the
    server or the links it follows choose the names): `curl -O`, `wget URL`."""
    _, _, valued = _DOWNLOADERS[name]
    longs = {long_option(a.partition("=")[0], _REMOTE) for a in args if a.startswith("--")}
    letters = ""
    for word in (w for w in args if w.startswith("-") and not w.startswith("--")):
        cut = [i for i, c in enumerate(word[1:], 1) if c in valued]  # its value follows
        letters += word[1 : cut[0] + 1] if cut else word[1:]
    if name == "curl":
        folder = (_values(args, {"--output-dir"}) or ["."])[-1]
        by_url = "O" in letters or bool(longs & {"--remote-name", "--remote-name-all"})
        return folder, by_url, by_url and ("J" in letters or "--remote-header-name" in longs)
    folder = (_values(args, {"--directory-prefix"}) + _in_bundle(args, "P", valued) or ["."])[-1]
    named = "--output-document" in longs or _in_bundle(args, "O", valued)
    chosen = bool(set(letters) & set("rmpx") or longs & _REMOTE - {"--directory-prefix"})
    return folder, not named, not named and (chosen or bool(_in_bundle(args, "i", valued)))


def _remote_names(name: str, args: list[str]) -> list[str]:
    """The files `curl -O URL` and `wget URL` save: the URL's last segment (wget's
    ``index.html`` for none), in `--output-dir`/`-P DIR`."""
    folder, by_url, _ = _download(name, args)
    if not by_url:
        return []
    _, _, valued = _DOWNLOADERS[name]
    out = []
    for i, word in enumerate(args):
        before = args[i - 1] if i else ""
        flags = before[1:] if before.startswith("-") and not before.startswith("--") else ""
        valued_before = any(c in valued for c in flags[-1:]) or (
            before.startswith("--") and "=" not in before and "://" not in word)  # fmt: skip
        if word.startswith("-") or valued_before:
            continue
        path = word.partition("://")[2] if "://" in word else word
        segment = re.split(r"[?#]", path)[0].partition("/")[2].rpartition("/")[2]
        segment = segment or ("index.html" if name == "wget" else "")
        if segment:
            out.append(segment if folder == "." else f"{folder.rstrip('/')}/{segment}")
    return out


def _in_bundle(args: list[str], letter: str, valued: str) -> list[str]:
    out = []
    for i, word in enumerate(args):
        if not word.startswith("-") or word.startswith("--"):
            continue
        for j, ch in enumerate(word[1:], 1):
            if ch in valued:
                if ch == letter:
                    out += [word[j + 1 :]] if word[j + 1 :] else args[i + 1 : i + 2]
                break
    return out


_OPENSSL_FILES = {"-out", "-keyout", "-certout"}
# ssh-keygen's options that take a value, and those that only read the key `-f` names.
_KEYGEN_VALUED = "abCDEfFIJjKmMNnOPrRstVwzZY"
_KEYGEN_READS = set("lyBFDQY")


def _ssh_keygen(args: list[str]) -> list[str]:
    letters = set()
    for word in args:
        if word.startswith("-") and not word.startswith("--"):
            for ch in word[1:]:
                letters.add(ch)
                if ch in _KEYGEN_VALUED:
                    break
    if letters & _KEYGEN_READS:
        return []
    return [f for key in _in_bundle(args, "f", _KEYGEN_VALUED) for f in (key, f"{key}.pub")]


_SCRIPT_VALUES = {"-c", "--command", "-E", "--echo", "-m", "--logging-format",
                  *_WRAPPER_FILES["script"]}  # fmt: skip
_PACKER_VALUE_LETTERS = "SobpTMDF"  # the rest of the word (or the next) is the value


def _packed(name: str, args: list[str]) -> list[str]:
    packer = _UNPACKERS.get(name, name)
    suffix, keeps = _PACKERS[packer]
    words = [long_option(a.partition("=")[0], _PACKER_VALUES | _PACKER_NO_WRITE | {
        "--decompress", "--uncompress", "--keep", "--rm"}) if a.startswith("--") else a
             for a in args]  # fmt: skip
    flags = "".join(_letters(w) for w in words if w.startswith("-") and not w.startswith("--"))
    if any(w in _PACKER_NO_WRITE for w in words) or set(flags) & set("ctlhV"):
        return _values(args, {"-o", "--output"})
    custom = _values(args, {"--suffix"}) + _bundled(args, "S")
    suffix = custom[-1] if custom else suffix
    unpacking = name in _UNPACKERS or "d" in flags or {"--decompress", "--uncompress"} & {
        w.partition("=")[0] for w in words}  # fmt: skip
    keeps = (keeps or "k" in flags or "--keep" in words) and "--rm" not in words
    operands = _operands(args, _PACKER_VALUES)
    named = _values(args, {"--output"}) + _bundled(args, "o")  # `zstd -d x.zst -o OUT`
    if packer == "lz4" and len(operands) == 2 and not named:  # `lz4 IN OUT`
        return operands[1:] + ([] if keeps else operands[:1])
    out = list(named)
    for operand in operands:
        if operand == "-":
            continue
        if not named:
            out.append(_unpacked_name(operand, suffix) if unpacking else operand + suffix)
        if not keeps:
            out.append(operand)  # taken away
    return out


def _bundled(args: list[str], letter: str) -> list[str]:
    """The values of a compressor's short option ``letter``, also last in a bundle
    (``-dS.x``, ``-dS .x``)."""
    out = []
    for i, word in enumerate(args):
        if word.startswith("-") and not word.startswith("--"):
            flags = _letters(word)
            if flags.endswith(letter):
                out += [word[len(flags) + 1 :]] if word[len(flags) + 1 :] else args[i + 1 : i + 2]
    return out


def _letters(word: str) -> str:
    """The flags of ``-kdS.suf``: ``kdS`` (a valued letter ends them: its value follows)."""
    for i, ch in enumerate(word[1:], 1):
        if ch in _PACKER_VALUE_LETTERS:
            return word[1 : i + 1]
    return word[1:]


def _unpacked_name(path: str, suffix: str) -> str:
    """``F.gz`` is ``F``, ``F.tgz`` is ``F.tar``; a name without a known suffix keeps its name
    (gzip refuses it; the name still meets the rules)."""
    for known in (suffix, *_KNOWN_SUFFIXES):
        if path.endswith(known) and len(PurePosixPath(path).name) > len(known):
            stem = path[: -len(known)]
            return stem + ".tar" if known in (".tgz", ".tbz2", ".txz") else stem
    return path


def _operands(args: list[str], valued: set[str]) -> list[str]:
    """The words that are neither options nor their values (all of them after ``--``)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return out + list(args[i + 1 :])
        if a.startswith("-") and a != "-":
            key = long_option(a.partition("=")[0], valued) if a.startswith("--") else a
            i += 2 if key in valued and "=" not in a else 1
            continue
        out.append(a)
        i += 1
    return out


def _values(args: list[str], options: set[str]) -> list[str]:
    """Each value of ``options``: ``-o F``, ``-oF``, ``--opt=F``, ``--opt F`` (a long option
    also by a start of its name)."""
    out = []
    for i, a in enumerate(args):
        key, eq, value = a.partition("=")
        key = long_option(key, options) if a.startswith("--") else key
        if a.startswith("--") and key in options:
            out += [value] if eq else args[i + 1 : i + 2]
        elif not a.startswith("--") and a[:2] in options:
            out += [a[2:]] if len(a) > 2 else args[i + 1 : i + 2]
    return out
