"""_spotrun_build.py - a PEP 517 build backend for the spotrun module,
standard library only (no setuptools, no wheel: `pip install ./python`
needs no package index).

It writes a py3-none-any wheel of the spotrun/ package (zipfile, with the
dist-info METADATA, WHEEL and RECORD of the wheel spec), an sdist (tar.gz),
and an editable wheel (PEP 660: a .pth file naming this directory).
Archives are reproducible: sorted names, fixed times (SOURCE_DATE_EPOCH
when set).
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

NAME = "spotrun"
HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = ("The job's side of spotrun: resume, checkpoint requests, atomic saves, "
           "commits, metrics")


def _version():
    with open(os.path.join(HERE, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in spotrun/__init__.py")
    return m.group(1)


def _epoch():
    return int(os.environ.get("SOURCE_DATE_EPOCH") or 315532800)  # 1980-01-01: zip's first day


def _package_files():
    """(archive name, absolute path) of spotrun/'s files, sorted; no caches."""
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for fn in sorted(files):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(root, fn)
                out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return out


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: >=3.7\n" % (NAME, _version(), SUMMARY))


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: _spotrun_build\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n")


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _write_wheel(directory, entries):
    """entries: [(archive name, bytes)]; writes the wheel with its RECORD."""
    name = "%s-%s-py3-none-any.whl" % (NAME, _version())
    dist = _dist_info()
    entries = list(entries) + [
        (dist + "/METADATA", _metadata().encode()),
        (dist + "/WHEEL", _wheel_file().encode()),
        (dist + "/top_level.txt", (NAME + "\n").encode()),
    ]
    record = []
    for arc, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
    record.append(dist + "/RECORD,,")
    entries.append((dist + "/RECORD", ("\n".join(record) + "\n").encode()))
    stamp = time.gmtime(max(_epoch(), 315532800))[:6]
    tmp = os.path.join(directory, "." + name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, os.path.join(directory, name))
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 hooks -------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = _dist_info()
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    for fn, text in (("METADATA", _metadata()), ("WHEEL", _wheel_file()),
                     ("top_level.txt", NAME + "\n")):
        with open(os.path.join(metadata_directory, dist, fn), "w", encoding="utf-8") as f:
            f.write(text)
    return dist


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(arc, _read(full)) for arc, full in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose .pth puts this source directory on sys.path."""
    return _write_wheel(wheel_directory, [("_spotrun_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
             ("_spotrun_build.py", os.path.join(HERE, "_spotrun_build.py"))]
    files += _package_files()
    pkg_info = _metadata().encode()
    tmp = os.path.join(sdist_directory, "." + name + ".tmp")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for arc, data in [("PKG-INFO", pkg_info)] + [(a, _read(f)) for a, f in sorted(files)]:
            info = tarfile.TarInfo(base + "/" + arc)
            info.size, info.mtime, info.mode = len(data), _epoch(), 0o644
            t.addfile(info, io.BytesIO(data))
    os.replace(tmp, os.path.join(sdist_directory, name))
    return name
