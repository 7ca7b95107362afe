"""A wheel file (PEP 427) from a staged tree: metadata from layout.py, a RECORD, fixed timestamps.

The same tree always gives the same bytes: entries are sorted, dated 1980-01-01 and
given mode 0644, so two builds of one commit can be compared byte for byte.
"""

import base64
import hashlib
import os
import zipfile

from cake_build import layout

_EPOCH = (1980, 1, 1, 0, 0, 0)
SUMMARY = "CAKE: GPU kernels in a verified schedule IR (KMeans, KNN), their compiler, command line and MCP server"


def wheel_name(version):
    return "%s-%s-py3-none-any.whl" % (layout.DIST_NAME.replace("-", "_"), version)


def metadata(version):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % layout.DIST_NAME,
        "Version: %s" % version,
        "Summary: %s" % SUMMARY,
        "Requires-Python: >=3.10",
    ]
    lines += ["Requires-Dist: %s" % d for d in layout.DEPENDENCIES]
    for extra, deps in sorted(layout.EXTRAS.items()):
        lines.append("Provides-Extra: %s" % extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (d, extra) for d in deps]
    return "\n".join(lines) + "\n"


def entry_points():
    return "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(layout.SCRIPTS.items()))


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def write_wheel(staged, files, out_dir, version):
    """Write the wheel of `files` (paths relative to `staged`) into out_dir; its path."""
    dist_info = "%s-%s.dist-info" % (layout.DIST_NAME.replace("-", "_"), version)
    entries = []
    for rel in files:
        with open(os.path.join(staged, rel), "rb") as f:
            entries.append((rel, f.read()))
    entries += [
        (dist_info + "/METADATA", metadata(version).encode()),
        (dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: cake_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (dist_info + "/entry_points.txt", entry_points().encode()),
        (dist_info + "/top_level.txt", b"cake\n"),
    ]
    record = "".join(_record_line(n, d) + "\n" for n, d in entries) + dist_info + "/RECORD,,\n"
    entries.append((dist_info + "/RECORD", record.encode()))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, wheel_name(version))
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(path + ".tmp", path)
    return path
