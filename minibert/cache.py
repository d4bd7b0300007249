"""The minibert cache (MINIBERT_CACHE, else ~/.cache/minibert): results computed once and read by every
later run, for one user or for a class sharing one folder.

An entry is written whole (a temporary file of its own, then one rename), with the permissions the
writer's umask gives any file, under a lock per entry: two processes asking for the same entry at once
compute it once, the second waiting for the first and reading its result. An entry that cannot be read
is computed again, with a one-line note; in a folder the user may not write, results are computed and
not kept.

A class shares one cache: the teacher owns the folder and makes it group-writable (chmod 2775), and every
folder minibert makes inside it takes those permissions, whoever makes it. An entry is read only where it
was written by the reader or by the cache folder's owner: a classmate can replace an entry (the file is then
theirs), but nobody else reads what they put there.

The two file habits of every save in minibert live here too: `locked` (a lock file, through the
filelock library: the same on Linux, macOS and Windows) and `share_like_any_file` (the permissions of
the user's umask). This module imports nothing of minibert: every other part may use it.
"""

import contextlib
import hashlib
import json
import os
import pathlib
import stat
import tempfile

import psutil
from filelock import FileLock, Timeout


@contextlib.contextmanager
def locked(lock_file):
    """Hold `lock_file` (made if missing; Windows deletes it again on release) against every other process,
    waiting while one holds it, and saying so; within one process a second hold of the same file nests.
    Where the lock file cannot be made (a read-only place) nothing can be written there either: go ahead
    unlocked."""
    lock = FileLock(lock_file, is_singleton=True)
    try:
        acquire_or_wait(lock, f"another process holds {lock_file} (it is computing or saving what this needs)")
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def acquire_or_wait(lock, who):
    """Take the lock; if another process has it, say whom this waits for before waiting (a student whose
    notebook waits on a classmate's run would otherwise see a cell that never ends, without a word)."""
    try:
        lock.acquire(blocking=False)
    except Timeout:
        print(f"note: waiting: {who}", flush=True)
        lock.acquire()


def share_like_any_file(path):
    """Give a saved file, or a folder and everything in it, the permissions the user's umask gives any
    new file. mkdtemp/mkstemp make them private and safetensors writes its files readable by their owner
    only; a checkpoint or a class's shared cache must be readable by whoever may read the user's other files."""
    umask = os.umask(0)
    os.umask(umask)
    if not os.path.isdir(path):
        os.chmod(path, 0o666 & ~umask)
        return
    os.chmod(path, 0o777 & ~umask)
    for root, dirs, files in os.walk(path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o777 & ~umask)
        for f in files:
            os.chmod(os.path.join(root, f), 0o666 & ~umask)


def fingerprint(*parts, code=(), files=(), blobs=()):
    """The one rule for naming a cached result: a hash of all that decides it. parts: settings and data
    (plain_data); code: file names of minibert modules whose source decides it (trainer.TRAINING_CODE for a
    trained model); files: paths whose bytes decide it (a checkpoint's weights); blobs: bytes (initial
    weights). A change to any of them gives another name, so an old result is never read for a new one."""
    h = hashlib.sha256(json.dumps(plain_data(parts), sort_keys=True).encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for path in [*(os.path.join(here, name) for name in code), *files]:
        with open(path, "rb") as f:
            h.update(f.read())
    for blob in blobs:
        h.update(blob)
    return h.hexdigest()[:20]


def plain_data(value):
    """value as JSON, exactly: numbers, strings, booleans, None, and lists, tuples and dicts of them; a
    tensor or array by a hash of its contents. Anything else is refused: its text would not be exact (a set
    is written in another order in every process, a large tensor's text leaves out its middle)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, (str, int, float, bool)) and k is not None]
        if bad:
            raise TypeError(f"a cache key's dict keys must be strings or numbers, not {type(bad[0]).__name__}")
        return {str(k): plain_data(v) for k, v in value.items()}
    if hasattr(value, "numpy") or type(value).__name__ == "ndarray":  # a torch tensor, or a numpy array
        import numpy
        array = numpy.ascontiguousarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)
        return {"array": hashlib.sha256(array.tobytes()).hexdigest(), "dtype": str(array.dtype),
                "shape": list(array.shape)}
    raise TypeError(f"a cache key holds a {type(value).__name__}, which has no exact text: give its contents as "
                    "numbers, strings, lists or dicts (a set as a sorted list, an object as its settings)")


def cache_dir():
    """MINIBERT_CACHE (a "~" in it means the home folder, as in a shell), else ~/.cache/minibert; an
    absolute path, so that a notebook and a command in another folder find the same cache."""
    given = os.environ.get("MINIBERT_CACHE")
    path = os.path.abspath(os.path.expanduser(given or os.path.join("~", ".cache", "minibert")))
    where = f"MINIBERT_CACHE={given!r}" if given else \
        f"the cache folder {path!r} (set MINIBERT_CACHE to choose another)"
    if os.path.exists(path) and not os.path.isdir(path):
        raise CacheFolderError(f"{where} is a file, not a folder: point MINIBERT_CACHE at a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise CacheFolderError(f"{where} cannot be made ({e.strerror}): point MINIBERT_CACHE at a folder you "
                               "may write, or one that exists") from None
    return path


def cache_folder(*names):
    """A folder inside the cache, made if missing, with the cache folder's own permissions: a class's shared
    cache (chmod 2775: the group may add entries) passes them on to every folder in it, whatever the umask
    of the student who happened to make it first."""
    root = cache_dir()
    path = os.path.join(root, *names)
    made = []
    level = path
    while not os.path.isdir(level) and level != root:
        made.append(level)
        level = os.path.dirname(level)
    os.makedirs(path, exist_ok=True)
    mode = stat.S_IMODE(os.stat(root).st_mode)
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # another user made it in the meantime: theirs to set
            os.chmod(folder, mode)
    return path


def stranger(path):
    """None where what `path` holds may be read: it was written by this user or by the owner of the cache
    folder (the teacher of a class sharing it). Otherwise who wrote it, in words: in a shared folder any
    student can put a file under an entry's name, and nobody else should read it. Where files carry no
    owner (Windows) or the file is gone, None."""
    uids = getattr(psutil.Process(), "uids", None)  # POSIX only
    try:
        owner = os.stat(path).st_uid
        trusted = {uids().effective, os.stat(cache_dir()).st_uid} if uids else None
    except OSError:
        return None
    if trusted is None or owner in trusted:
        return None
    try:
        return f"the user {pathlib.Path(path).owner()}"
    except (KeyError, NotImplementedError, OSError):
        return f"the user with id {owner}"


def untrusted_note(path, who, then):
    print(f"note: {path} was written by {who}, neither you nor the owner of the cache: it is not read; {then}")


def own_name(path):
    """`path` with this user's name added: where a classmate's file holds an entry's name, a user keeps their
    own copy beside it."""
    try:
        user = psutil.Process().username().replace("\\", "-")
    except (psutil.Error, OSError):
        user = "me"
    return f"{path}.{user}"


class CacheFolderError(OSError):
    """No cache folder can be had where MINIBERT_CACHE (or the default) points. An OSError, as a folder
    that cannot be written is: what can do without the cache (a tokenizer) goes on without it."""


def entry_lock(path):
    """The lock file of a cache entry: whoever computes the entry holds it, so that others wait."""
    parent, name = os.path.split(path)
    return os.path.join(parent, f".{name}.lock")


class RunInUse(RuntimeError):
    """Another process is training this run folder."""


@contextlib.contextmanager
def training_lock(path, wait=False):
    """Hold a run folder for one training process: the lock file `.NAME.training` beside it, and
    `.NAME.trainer`, which names the process that holds it. Another training of the same folder (a second
    run, or a --resume while the first still saves) is refused with that process's id, so that weights and
    state always come from one save; wait=True waits for it to finish instead, saying so. Where no lock file
    can be made (a read-only folder) nothing can be saved either, and training goes ahead unlocked."""
    parent, name = os.path.split(os.path.abspath(path))
    lock, holder_file = FileLock(os.path.join(parent, f".{name}.training")), os.path.join(parent, f".{name}.trainer")

    def holder():
        try:
            with open(holder_file, encoding="utf-8") as f:
                return f"process {f.read().strip() or '(unknown)'}"
        except OSError:
            return "another process"
    try:
        os.makedirs(parent, exist_ok=True)  # `--out new/run`: the lock needs the folder that will hold the run
        if wait:
            acquire_or_wait(lock, f"{holder()} is training {path!r}; this goes on when it has finished")
        else:
            lock.acquire(blocking=False)
    except Timeout:
        raise RunInUse(f"{path!r} is being trained by {holder()} on this machine: one process trains a "
                       "run folder at a time. Wait for it to finish (then --resume, or read the run), or "
                       "train into another folder") from None
    except OSError:  # a read-only place: nothing can be saved there either
        yield
        return
    try:
        with contextlib.suppress(OSError), open(holder_file, "w", encoding="utf-8") as f:  # for a second process
            f.write(f"{os.getpid()}\n")
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(holder_file)
        lock.release()


def writable(folder):
    """Whether results can be saved in a cache folder; if not, say that they will be computed only."""
    if os.access(folder, os.W_OK | os.X_OK):
        return True
    print(f"note: the cache {folder} is read-only for you: this result is computed but not kept "
          "(set MINIBERT_CACHE to a folder of your own to keep it)")
    return False


@contextlib.contextmanager
def atomic_file(path):
    """Write a file whole or not at all: yields a temporary name of its own beside `path` to write to,
    then gives it the permissions of any file the user writes and renames it into place in one step (a
    reader sees the old file or the new one, never half of one). On an error the temporary is removed."""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    os.close(fd)
    try:
        yield tmp
        share_like_any_file(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


ENTRY_HEADER = b"minibert cache entry, sha256 "  # then the digest of what follows the line, then torch.save's bytes


def write_entry(path, digest, value):
    """An entry file whole or not at all: a first line with the sha256 of the rest, then {key, value} as
    torch.save writes it, which must load back as plain data (what torch.load reads safely)."""
    import io
    import torch
    buffer = io.BytesIO()
    try:
        torch.save({"key": digest, "value": value}, buffer)
        torch.load(io.BytesIO(buffer.getvalue()))  # what the next run will do: only plain data loads safely
    except Exception as e:
        raise ValueError(f"cached({os.path.basename(path)[:-3]!r}) can keep tensors, numbers, strings, and lists, "
                         f"tuples and dicts of them; the value computed holds something else ({e})") from None
    payload = buffer.getvalue()
    with atomic_file(path) as tmp, open(tmp, "wb") as f:
        f.write(ENTRY_HEADER + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def read_entry(path):
    """{key, value} of an entry file, or ValueError if its bytes are not the ones written (cut short, or
    changed: torch.load alone would serve a changed tensor as if whole)."""
    import io
    import torch
    with open(path, "rb") as f:
        header, _, payload = f.read().partition(b"\n")
    if not header.startswith(ENTRY_HEADER) or header[len(ENTRY_HEADER):].decode(errors="replace") != \
            hashlib.sha256(payload).hexdigest():
        raise ValueError("its bytes are not the ones written")
    return torch.load(io.BytesIO(payload))


def cached(name, key, compute, folder="runs"):
    """compute() once, then its result from the cache: name is a file name inside `folder` of the
    cache, key anything that decides the result (plain_data: settings, data, a fingerprint of the code and
    the starting weights). A different key computes it again. The result may hold tensors, numbers,
    strings, and lists, tuples and dicts of them: what loads back safely."""
    path = os.path.join(cache_folder(folder), name + ".pt")
    digest = fingerprint(key)
    who = stranger(path)
    if who:
        untrusted_note(path, who, "this result is computed and kept under your own name")
        path = own_name(path)
    with locked(entry_lock(path)):
        if os.path.exists(path):
            try:
                saved = read_entry(path)
            except Exception as e:  # a file cut short or changed, or written by another version
                print(f"note: the cache entry {path} could not be read ({type(e).__name__}: {str(e)[:80]}); "
                      "computing it again")
            else:
                if isinstance(saved, dict) and saved.get("key") == digest:
                    return saved["value"]
        value = compute()
        if not writable(os.path.dirname(path)):
            return value
        try:
            write_entry(path, digest, value)
        except OSError as e:  # a full disk, say: the result is good, only not kept
            print(f"note: the cache entry {path} could not be written ({e.strerror or e}); the result is "
                  "computed but not kept")
    return value
