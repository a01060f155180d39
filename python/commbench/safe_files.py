"""Writing output files without following links another user planted.

`commbench report JOB` writes into JOB/report/, and JOB may belong to someone else (a shared
results area). Opened by name, report/report.md could be that user's symbolic link to any file the
person running the report may write (root's /etc/...), and report/ itself a link to any folder. So:

- the output folder is opened once, without following a link in its last component, and refused
  when it is a link or belongs to another user (root's folders excepted: root is trusted anyway,
  and only root can have let us write there); every file is then written relative to that open
  folder, so swapping the path afterwards changes nothing;
- each file is written to a new file of a random name (O_EXCL: never an existing file or link),
  then renamed over the name: a rename replaces a planted link, it does not write through it;
- sub-folders (plots/) the same way;
- the folders above it are not opened by name either: the path is resolved from "/" component by
  component (resolve()), following a symbolic link only when it is ours or root's (another
  user's link is refused: they could point it anywhere at any time), and every folder of the
  resolved path is then opened relative to the one above it without following links
  (open_resolved()), missing ones made there with mkdir: a component swapped for a link in
  between makes the open fail, refused. The output folder must not be writable by every user
  without the sticky bit either.

Refusals raise UnsafeOutput, a ResultsError: `commbench report: <why>; write the report elsewhere
with -o DIR`, exit 2. Other failures (no permission, no space) stay OSErrors.
"""
import contextlib
import errno
import os
import secrets
import stat

from .load import ResultsError

DIR_MODE = 0o755   # less the umask, as mkdir applies it
FILE_MODE = 0o666  # less the umask: what open(path, "w") gives a new file
REPORT_HINT = "write the report elsewhere with -o DIR"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
# The folders passed through on the way: O_PATH needs only permission to pass (x), not to list
# (r), as on a cluster's drwx--x--x project folders; openat, mkdirat and fstat take it.
_PASS_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


class UnsafeOutput(ResultsError):
    """An output folder that another user could redirect: a symbolic link, or not ours."""


def _check_owner(st, path, hint):
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        raise UnsafeOutput(
            f"{path} belongs to another user (uid {st.st_uid}), who could replace what is written "
            f"there by links to other files; {hint}")
    if st.st_mode & 0o002 and not st.st_mode & 0o1000:
        raise UnsafeOutput(
            f"{path} is writable by every user and has no sticky bit, so anyone could replace "
            f"what is written there by links to other files; {hint}")


def _is_link(name, dir_fd=None):
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _open_dir(name, shown, hint, follow, dir_fd=None):
    """An fd of the folder `name` (relative to dir_fd when given), refused when it is a link
    (unless follow) or not ours."""
    flags = _DIR_FLAGS | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        # O_NOFOLLOW|O_DIRECTORY on a link: ENOTDIR (Linux) or ELOOP.
        if not follow and e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, dir_fd):
            raise UnsafeOutput(
                f"{shown} is a symbolic link; commbench does not write through a link in "
                f"its output folder (whoever owns it could point it anywhere); {hint}"
            ) from None
        raise
    try:
        _check_owner(os.fstat(fd), shown, hint)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _mkdir(name, dir_fd=None):
    try:
        os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
    except FileExistsError:
        pass  # an existing folder is checked when opened; anything else fails to open


def _join(parts):
    return "/" + "/".join(parts)


def resolve(path, hint=REPORT_HINT, shown=None):
    """The components, from "/", of the absolute `path` with its symbolic links replaced by
    their targets. A link is followed only when it belongs to us or to root (as the kernel's
    fs.protected_symlinks would have it): another user's link could be pointed anywhere between
    now and the write, so it is refused. Missing components are kept as named (made later)."""
    path = os.path.abspath(path)
    me = os.geteuid()
    pending = [c for c in reversed(path.split("/")) if c]
    done, links, missing = [], 0, False
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            if done:
                done.pop()
            continue
        cur = _join(done + [name])
        if missing:
            done.append(name)
            continue
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            missing = True  # the rest is made, or fails to open, later
            done.append(name)
            continue
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid not in (me, 0):
                raise UnsafeOutput(
                    f"{shown or path} goes through a symbolic link owned by uid {st.st_uid} "
                    f"({cur}), "
                    f"who could point it anywhere; give a path without it; {hint}")
            links += 1
            if links > 40:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
            target = os.readlink(cur)
            if target.startswith("/"):
                done = []
            pending.extend(c for c in reversed(target.split("/")) if c)
            continue
        if pending and not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), cur)
        done.append(name)
    return done


def open_resolved(parts, create, hint=REPORT_HINT, shown=None, last_named=False):
    """An fd of the folder whose components from "/" are `parts` (from resolve()): each opened
    relative to the one above it without following a link, so a component swapped for a link
    since resolve() makes the open fail (refused); missing ones are made when `create`. The last
    folder must be ours or root's, and not writable by all without the sticky bit. `shown` is
    the path named in messages; `last_named`: the last component is the user's own name, not
    resolved (a link there is refused as such)."""
    shown = shown or _join(parts)
    fd = os.open("/", _PASS_FLAGS if parts else _DIR_FLAGS)
    try:
        for i, name in enumerate(parts):
            cur = _join(parts[:i + 1])
            flags = (_DIR_FLAGS if i == len(parts) - 1 else _PASS_FLAGS) | os.O_NOFOLLOW
            try:
                try:
                    nfd = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    _mkdir(name, fd)
                    nfd = os.open(name, flags, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, fd):
                    if i == len(parts) - 1 and last_named:
                        raise UnsafeOutput(
                            f"{shown} is a symbolic link; commbench does not write through a "
                            f"link in its output folder (whoever owns it could point it "
                            f"anywhere); {hint}") from None
                    raise UnsafeOutput(
                        f"{cur} became a symbolic link while {shown} was being opened; "
                        f"give a path without it; {hint}") from None
                if e.filename == name or not e.filename:
                    e.filename = cur  # the message names the whole path
                raise
            os.close(fd)
            fd = nfd
        _check_owner(os.fstat(fd), shown, hint)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Folder:
    """An open output folder: every write goes through its descriptor."""

    def __init__(self, fd, path, hint):
        self.fd, self.path, self.hint = fd, path, hint
        self._subs = {}

    @classmethod
    def open(cls, path, create=True, follow=False, hint=REPORT_HINT):
        """Opens (and with `create`, makes, with its missing parents) the folder `path`. Its
        path is resolved from "/" by resolve() (links followed only when ours or root's) and
        every folder on it opened without following a link; `path` itself must not be a link
        unless `follow`."""
        path = os.path.abspath(path)
        base = os.path.basename(path)
        if follow or not base:
            parts = resolve(path, hint)
        else:
            parts = resolve(os.path.dirname(path), hint, path) + [base]
        return cls(open_resolved(parts, create, hint, path, last_named=not follow and bool(base)),
                   path, hint)

    def sub(self, name):
        """The sub-folder `name`, made if missing, opened the same way (kept open)."""
        if name not in self._subs:
            shown = os.path.join(self.path, name)
            try:
                _mkdir(name, self.fd)
                fd = _open_dir(name, shown, self.hint, False, self.fd)
            except OSError as e:
                if e.filename == name:
                    e.filename = shown  # the message names the whole path
                raise
            self._subs[name] = Folder(fd, shown, self.hint)
        return self._subs[name]

    @contextlib.contextmanager
    def create(self, name, binary=False, newline=None):
        """A file object for a new `name`: written to a temporary file, renamed over `name` when
        the block ends without an exception (removed otherwise)."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not a file name: {name!r}")
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                 | getattr(os, "O_CLOEXEC", 0))
        for _ in range(100):
            tmp = f".{name}.{secrets.token_hex(8)}.tmp"
            try:
                fd = os.open(tmp, flags, FILE_MODE, dir_fd=self.fd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, "no free temporary name",
                                  os.path.join(self.path, name))
        try:
            with (os.fdopen(fd, "wb") if binary
                  else os.fdopen(fd, "w", encoding="utf-8", newline=newline)) as f:
                yield f
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            if isinstance(e, OSError) and (not e.filename or e.filename == tmp):
                e.filename, e.filename2 = os.path.join(self.path, name), None
            raise

    def write(self, name, data):
        """Writes `data` (str as UTF-8, or bytes) as the file `name`."""
        with self.create(name, binary=isinstance(data, (bytes, bytearray))) as f:
            f.write(data)

    def close(self):
        for s in self._subs.values():
            s.close()
        self._subs = {}
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_file(path, hint="choose another path"):
    """Raises, without writing `path`, what create_file(path) would raise for its folder (missing,
    not a folder, not ours, not writable, a read-only file system) or for `path` being a folder:
    a temporary file is made in the folder and removed. For output asked for on the command line
    (--junit), checked before the work rather than found to fail after it."""
    path = os.path.abspath(path)
    folder, name = os.path.dirname(path), os.path.basename(path)
    parts = resolve(folder, hint, path)
    with Folder(open_resolved(parts, False, hint, folder), folder, hint) as d:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.stat(name, dir_fd=d.fd, follow_symlinks=False).st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | getattr(os, "O_CLOEXEC", 0), FILE_MODE, dir_fd=d.fd)
        except OSError as e:
            e.filename, e.filename2 = folder, None
            raise
        os.close(fd)
        os.unlink(tmp, dir_fd=d.fd)


@contextlib.contextmanager
def create_file(path, binary=False, newline=None, hint="choose another path"):
    """A file object for the user-given file `path`, written through its (existing) folder:
    the folder may be reached through links that are ours or root's (resolve()), and must be
    ours (or root's);
    a link at `path` itself is replaced, not written through."""
    path = os.path.abspath(path)
    parts = resolve(os.path.dirname(path), hint, path)
    with Folder(open_resolved(parts, False, hint, os.path.dirname(path)),
                os.path.dirname(path), hint) as d:
        with d.create(os.path.basename(path), binary=binary, newline=newline) as f:
            yield f
