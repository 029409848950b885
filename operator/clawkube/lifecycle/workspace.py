"""Workspace copies, content manifests, diffs, snapshots and restores, safe on trees an agent made.

Every walk here is iterative and works on directory file descriptors with O_NOFOLLOW: a symbolic link is recorded
as a link and never followed, a FIFO, socket or device is recorded and never opened, a tree deeper than
MAX_DEPTH levels is cut there (and the cut recorded), file contents are streamed (bounded memory for any size),
and names that are not UTF-8 stay as they are (surrogate escapes). Nothing raises for what the agent left
behind; what could not be taken is listed in a `TreeNotes`.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

MAX_DEPTH = 128  # folder levels walked below a root
CHUNK = 1 << 20
# gzip level of the snapshots: 1, not tarfile's 9 (a snapshot is written and read back once per trial; level 9 takes
# several times as long for a few percent less size, minutes on a workspace of some GB)
SNAPSHOT_GZIP_LEVEL = 1
SNAPSHOT_LIMIT = int(os.environ.get("CLAWKUBE_SNAPSHOT_LIMIT", str(4 << 30)))  # bytes of file content per snapshot
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class TreeNotes:
    """What a walk or copy recorded instead of taking: special files, cut-off depths, omitted or refused entries."""

    special: list[str] = field(default_factory=list)  # "path (fifo)"
    omitted: list[str] = field(default_factory=list)  # "path: reason"

    def empty(self) -> bool:
        return not (self.special or self.omitted)

    def as_dict(self) -> dict[str, list[str]]:
        return {"special": self.special, "omitted": self.omitted}


class Entry(NamedTuple):
    rel: str  # path below the root, '/'-separated
    kind: str  # dir | file | link | special
    st: os.stat_result
    dir_fd: int  # the folder holding it (valid only until the walk moves on)
    name: str


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "link"
    return {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "char device",
            stat.S_IFBLK: "block device"}.get(stat.S_IFMT(mode), "special")


def walk(root: Path, notes: Optional[TreeNotes] = None) -> Iterator[Entry]:
    """Every entry below `root` in sorted order, parents first; never follows a link."""
    notes = notes if notes is not None else TreeNotes()
    try:
        top = os.open(root, _DIR)
    except OSError as e:
        notes.omitted.append(f".: {e.strerror}")
        return
    stack: list[list] = []
    try:
        stack.append([top, "", sorted(os.listdir(top)), 0])
        while stack:
            frame = stack[-1]
            fd, rel, names, i = frame
            if i >= len(names):
                os.close(fd)
                stack.pop()
                continue
            frame[3] = i + 1
            name = names[i]
            r = f"{rel}/{name}" if rel else name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError as e:
                notes.omitted.append(f"{r}: {e.strerror}")
                continue
            kind = _kind(st.st_mode)
            if kind in ("dir", "file", "link"):
                yield Entry(r, kind, st, fd, name)
            else:
                notes.special.append(f"{r} ({kind})")
                continue
            if kind != "dir":
                continue
            if len(stack) >= MAX_DEPTH:
                notes.omitted.append(f"{r}/: deeper than {MAX_DEPTH} levels, not walked")
                continue
            try:
                sub = os.open(name, _DIR, dir_fd=fd)
            except OSError as e:
                notes.omitted.append(f"{r}/: {e.strerror}")
                continue
            try:
                listing = sorted(os.listdir(sub))
            except OSError as e:
                os.close(sub)
                notes.omitted.append(f"{r}/: {e.strerror}")
                continue
            stack.append([sub, r, listing, 0])
    finally:
        for frame in stack:
            try:
                os.close(frame[0])
            except OSError:
                pass


def _open_file(e: Entry) -> int:
    return os.open(e.name, _FILE, dir_fd=e.dir_fd)


def _sha256_fd(fd: int) -> str:
    h = hashlib.sha256()
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return h.hexdigest()
        h.update(chunk)


def manifest(root: Path, notes: Optional[TreeNotes] = None) -> dict[str, str]:
    """relative path -> sha256 of every regular file under root; links as "symlink:<target>" (not followed)."""
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for e in walk(root, notes):
        if e.kind == "link":
            out[e.rel] = "symlink:" + os.readlink(e.name, dir_fd=e.dir_fd)
        elif e.kind == "file":
            try:
                fd = _open_file(e)
            except OSError as err:
                out[e.rel] = f"unreadable:{err.strerror}"
                continue
            try:
                out[e.rel] = _sha256_fd(fd)
            finally:
                os.close(fd)
    return out


def diff(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    return {
        "added": sorted(set(after) - set(before)),
        "modified": sorted(k for k in set(before) & set(after) if before[k] != after[k]),
        "deleted": sorted(set(before) - set(after)),
    }


def snapshot(root: Path, out_tar: Path, limit: int = SNAPSHOT_LIMIT) -> TreeNotes:
    """tar.gz of the workspace: folders, regular files (streamed), links as links, hard links as hard links.
    Special files are recorded, not stored; files past `limit` bytes of content in all are recorded, not stored."""
    notes = TreeNotes()
    seen: dict[tuple[int, int], str] = {}
    total = 0
    with tarfile.open(out_tar, "w:gz", compresslevel=SNAPSHOT_GZIP_LEVEL, format=tarfile.PAX_FORMAT) as tar:
        for e in walk(root, notes):
            ti = tarfile.TarInfo(e.rel)
            ti.mtime, ti.mode = int(e.st.st_mtime), stat.S_IMODE(e.st.st_mode) & 0o777
            if e.kind == "dir":
                ti.type = tarfile.DIRTYPE
                tar.addfile(ti)
            elif e.kind == "link":
                ti.type, ti.linkname = tarfile.SYMTYPE, os.readlink(e.name, dir_fd=e.dir_fd)
                tar.addfile(ti)
            else:
                key = (e.st.st_dev, e.st.st_ino)
                if e.st.st_nlink > 1 and key in seen:
                    ti.type, ti.linkname = tarfile.LNKTYPE, seen[key]
                    tar.addfile(ti)
                    continue
                if total + e.st.st_size > limit:
                    notes.omitted.append(f"{e.rel}: {e.st.st_size} bytes past the snapshot limit of {limit}")
                    continue
                try:
                    fd = _open_file(e)
                except OSError as err:
                    notes.omitted.append(f"{e.rel}: {err.strerror}")
                    continue
                with os.fdopen(fd, "rb") as f:
                    ti.size = os.fstat(fd).st_size
                    tar.addfile(ti, f)
                total += ti.size
                seen[key] = e.rel
    return notes


def _parts(name: str) -> Optional[list[str]]:
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or not parts or ".." in parts:
        return None
    return parts


def _open_dirs(root_fd: int, parts: list[str], create: bool) -> int:
    """A descriptor of root/parts..., every component a real folder (never a link); created if `create`."""
    fd = os.dup(root_fd)
    try:
        for p in parts:
            try:
                nxt = os.open(p, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(p, 0o755, dir_fd=fd)
                nxt = os.open(p, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _write_stream(src, name: str, dir_fd: int, mode: int) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as out:
        while True:
            chunk = src.read(CHUNK)
            if not chunk:
                break
            out.write(chunk)


def restore(snapshot_tar: Path, dest: Path) -> TreeNotes:
    """Unpack a snapshot made by `snapshot` into `dest`. Links are recreated as they were (never followed: an
    entry below a link is refused), hard links only to files already unpacked, no special files, no absolute
    names or '..', no setuid bits. Refused entries are recorded, not raised."""
    notes = TreeNotes()
    dest.mkdir(parents=True, exist_ok=True)
    root = os.open(dest, _DIR)
    try:
        with tarfile.open(snapshot_tar, "r:gz") as tar:
            for m in tar:
                parts = _parts(m.name)
                if parts is None:
                    notes.omitted.append(f"{m.name}: absolute or leaves the workspace")
                    continue
                try:
                    _restore_one(tar, m, parts, root)
                except OSError as e:
                    notes.omitted.append(f"{m.name}: {e.strerror or e}")
    finally:
        os.close(root)
    return notes


def _restore_one(tar: tarfile.TarFile, m: tarfile.TarInfo, parts: list[str], root: int) -> None:
    parent = _open_dirs(root, parts[:-1], create=True)
    leaf = parts[-1]
    try:
        if m.isdir():
            try:
                os.mkdir(leaf, 0o755, dir_fd=parent)
            except FileExistsError:
                pass
        elif m.isfile():
            src = tar.extractfile(m)
            _write_stream(src, leaf, parent, (m.mode & 0o777) | 0o600)
        elif m.issym():
            os.symlink(m.linkname, leaf, dir_fd=parent)
        elif m.islnk():
            tparts = _parts(m.linkname)
            if tparts is None:
                raise OSError(f"hard link to {m.linkname!r} outside the workspace")
            tdir = _open_dirs(root, tparts[:-1], create=False)
            try:
                if not stat.S_ISREG(os.stat(tparts[-1], dir_fd=tdir, follow_symlinks=False).st_mode):
                    raise OSError(f"hard link to {m.linkname!r}, not a regular file")
                os.link(tparts[-1], leaf, src_dir_fd=tdir, dst_dir_fd=parent, follow_symlinks=False)
            finally:
                os.close(tdir)
        else:
            raise OSError("special file not restored")
    finally:
        os.close(parent)


def copy_tree(src: Path, dest: Path, notes: Optional[TreeNotes] = None) -> TreeNotes:
    """Copy the contents of src into dest (dest may exist; nothing in it is followed): folders, regular files
    (streamed), links as links; special files and what is deeper than MAX_DEPTH are recorded, not copied."""
    notes = notes if notes is not None else TreeNotes()
    dest.mkdir(parents=True, exist_ok=True)
    if not src.is_dir() or src.is_symlink():
        return notes
    root = os.open(dest, _DIR)
    try:
        for e in walk(src, notes):
            parts = e.rel.split("/")
            try:
                parent = _open_dirs(root, parts[:-1], create=True)
            except OSError as err:
                notes.omitted.append(f"{e.rel}: {err.strerror or err}")
                continue
            try:
                if e.kind == "dir":
                    try:
                        os.mkdir(parts[-1], 0o755, dir_fd=parent)
                    except FileExistsError:
                        pass
                    continue
                _unlink_any(parts[-1], parent, dest / e.rel)
                if e.kind == "link":
                    os.symlink(os.readlink(e.name, dir_fd=e.dir_fd), parts[-1], dir_fd=parent)
                else:
                    with os.fdopen(_open_file(e), "rb") as f:
                        _write_stream(f, parts[-1], parent, stat.S_IMODE(e.st.st_mode) & 0o777 | 0o600)
            except OSError as err:
                notes.omitted.append(f"{e.rel}: {err.strerror or err}")
            finally:
                os.close(parent)
    finally:
        os.close(root)
    return notes


def _unlink_any(name: str, dir_fd: int, path: Path) -> bool:
    """Remove whatever is at name (a folder with everything in it; `path` is its full path, made of real folders
    only); True if something was there."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        rmtree(path)
    else:
        os.unlink(name, dir_fd=dir_fd)
    return True


def place_files(src: Path, ws: Path) -> list[str]:
    """Write the grading-only files under `src` into the grading workspace `ws` so that none of them can alias
    anything the agent made: every folder on the way is a real folder (an agent's link or file there is
    removed), and each file is a new inode (whatever the agent left at its path is removed first, so a planted
    link or hard link is never written through). Returns the paths where the agent had left something."""
    replaced: list[str] = []
    if not src.is_dir():
        return replaced
    root = os.open(ws, _DIR)
    try:
        for e in walk(src):
            parts = e.rel.split("/")
            fd = os.dup(root)
            try:
                for p in parts[:-1]:
                    try:
                        st = os.stat(p, dir_fd=fd, follow_symlinks=False)
                        if not stat.S_ISDIR(st.st_mode):
                            os.unlink(p, dir_fd=fd)
                            replaced.append(p)
                            os.mkdir(p, 0o755, dir_fd=fd)
                    except FileNotFoundError:
                        os.mkdir(p, 0o755, dir_fd=fd)
                    nxt = os.open(p, _DIR, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
                leaf = parts[-1]
                if e.kind == "dir":
                    try:
                        st = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
                        if not stat.S_ISDIR(st.st_mode):
                            os.unlink(leaf, dir_fd=fd)
                            replaced.append(e.rel)
                            os.mkdir(leaf, 0o755, dir_fd=fd)
                    except FileNotFoundError:
                        os.mkdir(leaf, 0o755, dir_fd=fd)
                    continue
                if _unlink_any(leaf, fd, ws / e.rel):
                    replaced.append(e.rel)
                if e.kind == "link":
                    os.symlink(os.readlink(e.name, dir_fd=e.dir_fd), leaf, dir_fd=fd)
                else:
                    with os.fdopen(_open_file(e), "rb") as f:
                        _write_stream(f, leaf, fd, 0o644)
            finally:
                os.close(fd)
    finally:
        os.close(root)
    return replaced


def safe_read(root: Path, rel: str, cap: int) -> Optional[bytes]:
    """The first `cap` bytes of regular file root/rel, reached without following any link; None otherwise."""
    parts = _parts(rel)
    if parts is None:
        return None
    try:
        rfd = os.open(root, _DIR)
    except OSError:
        return None
    try:
        d = _open_dirs(rfd, parts[:-1], create=False)
    except OSError:
        return None
    finally:
        os.close(rfd)
    try:
        fd = os.open(parts[-1], _FILE, dir_fd=d)
    except OSError:
        return None
    finally:
        os.close(d)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        out = bytearray()
        while len(out) < cap:
            chunk = os.read(fd, min(CHUNK, cap - len(out)))
            if not chunk:
                break
            out += chunk
        return bytes(out)
    finally:
        os.close(fd)


def chown_tree(root: Path, uid: int, gid: Optional[int] = None) -> None:
    """lchown root and everything below it (links themselves, never their targets)."""
    gid = uid if gid is None else gid
    os.chown(root, uid, gid, follow_symlinks=False)
    for e in walk(root):
        try:
            os.chown(e.name, uid, gid, dir_fd=e.dir_fd, follow_symlinks=False)
        except OSError:
            pass


RMTREE_DEPTH = 64  # deeper trees (an agent's) go to coreutils rm, which has no depth limit


def rmtree(path: Path) -> None:
    """Remove a tree of any depth without following links, staying on one filesystem. In process (descriptor
    based, never a path through a link) for ordinary trees; anything else (deeper than RMTREE_DEPTH, another
    filesystem below, an error) goes to coreutils `rm -rf --one-file-system`, as every removal once did (a
    process per removal, several per trial)."""
    if not os.path.lexists(path):
        return
    try:
        _remove_in_process(Path(path))
        return
    except OSError:
        pass
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)


def _remove_in_process(path: Path) -> None:
    top = os.lstat(path)
    if not stat.S_ISDIR(top.st_mode):
        os.unlink(path)
        return
    # (descriptor of a folder, its subfolders still to visit, its name in the folder above); each folder is read once
    stack: list[tuple[int, list[str], str]] = []

    def enter(fd: int, name: str) -> None:
        stack.append((fd, [], name))
        if os.fstat(fd).st_dev != top.st_dev:
            raise OSError(f"{name}: another filesystem")
        with os.scandir(fd) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack[-1][1].append(e.name)
                else:
                    os.unlink(e.name, dir_fd=fd)

    try:
        enter(os.open(path, _DIR), "")
        while stack:
            fd, subs, _ = stack[-1]
            if subs:
                if len(stack) >= RMTREE_DEPTH:
                    raise OSError(f"deeper than {RMTREE_DEPTH} folders")
                name = subs.pop()
                enter(os.open(name, _DIR, dir_fd=fd), name)
                continue
            _, _, name = stack.pop()
            os.close(fd)
            if stack:
                os.rmdir(name, dir_fd=stack[-1][0])
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    os.rmdir(path)


def write_json(path: Path, obj) -> None:
    """Write JSON atomically (write to a temp file, then rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True, default=str))
    tmp.replace(path)


MAX_HOPS = 40
SAFE_OUTSIDE = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/dev", "/proc")


def _resolve(ws: Path, anchor: list[str], start: list[str], target: str) -> tuple[str, str]:
    """Resolve a link's target the way a process in the grading sandbox would, the workspace being at `anchor`
    (path components). ("inside", rel) | ("outside", absolute path) | ("loop", "")."""
    cur = list(start)
    todo = [p for p in target.split("/")]
    if target.startswith("/"):
        cur = []
    hops = 0
    while todo:
        c = todo.pop(0)
        if c in ("", "."):
            continue
        if c == "..":
            if cur:
                cur.pop()
            continue
        cur.append(c)
        if cur[:len(anchor)] != anchor:
            if len(cur) <= len(anchor) and anchor[:len(cur)] == cur:
                continue  # still on the way down to the workspace
            return "outside", "/" + "/".join(cur + [p for p in todo if p not in ("", ".")])
        rel = "/".join(cur[len(anchor):])
        p = ws / rel
        if p.is_symlink():
            hops += 1
            if hops > MAX_HOPS:
                return "loop", ""
            t = os.readlink(p)
            cur.pop()
            if t.startswith("/"):
                cur = []
            todo = [x for x in t.split("/")] + todo
    if cur[:len(anchor)] != anchor:
        return "outside", "/" + "/".join(cur)
    return "inside", "/".join(cur[len(anchor):])


def _under(rel: str, roots: set[str]) -> bool:
    return any(rel == r or rel.startswith(r + "/") or r.startswith(rel + "/") or rel == "" for r in roots)


def drop_links_to_grading(ws: Path, grading: set[str], anchor: str) -> list[str]:
    """Remove every link of the grading workspace that would lead a grader into grading-only material: a link
    that resolves to a grading-only path, into one or above one (inside the workspace), or anywhere outside the
    workspace but the system folders (where the grader's own inputs are). Returns the links removed."""
    parts = [p for p in anchor.split("/") if p]
    removed: list[str] = []
    links = [e.rel for e in walk(ws) if e.kind == "link"]
    for rel in links:
        p = ws / rel
        where, what = _resolve(ws, parts, parts + rel.split("/")[:-1], os.readlink(p))
        bad = (where == "loop" or (where == "inside" and _under(what, grading)) or
               (where == "outside" and not any(what == s or what.startswith(s + "/") for s in SAFE_OUTSIDE)))
        if bad:
            p.unlink()
            removed.append(rel)
    return removed
