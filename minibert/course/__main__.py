"""The course's commands (the Makefile's student, site and prose targets):

    python -m minibert.course student build/student   # exercises without solutions (make student)
    python -m minibert.course site build/site         # static HTML of the executed notebooks (make site)
    python -m minibert.course prose [NOTEBOOK ...]    # words and quoted numbers of each lesson's prose
    python -m minibert.course robustness [SETTING ...] [--notebooks NN ...]   # every assertion's margin
    python -m minibert.course colab                  # each notebook's first cell, from pyproject's address
"""

import os
import sys

from .notebooks import build_site, notebook_paths, prose_report, write_colab_cells, write_student_versions


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv[:1] == ["robustness"]:
        from .robustness import main as robustness
        return robustness(argv[1:])
    if argv == ["colab"]:
        write_colab_cells()
        return 0
    if argv[:1] == ["prose"]:
        print(prose_report(argv[1:] or notebook_paths()))
        return 0
    if len(argv) not in (1, 2) or argv[0] not in ("student", "site"):
        print(__doc__)
        return 2
    if argv[0] == "student":
        written = write_student_versions(dst=argv[1] if len(argv) > 1 else "build/student")
    else:
        written = build_site(dst=argv[1] if len(argv) > 1 else "build/site")
    print(f"wrote {len(written)} files to {os.path.dirname(written[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
