"""What `make` does with the notebooks: student versions, the lessons' prose budgets, the website.

The notebooks in notebooks/ are the solution versions. Each exercise's solution sits between
`### BEGIN SOLUTION` and `### END SOLUTION` (the markers nbgrader uses; nbgrader also needs its own
cell metadata, which these notebooks do not carry); the student version replaces each such region with a
`raise NotImplementedError` stub, clears every output, and keeps the check calls, which then report
"not done yet".
"""

import glob
import html
import os
import re
import shutil

# ---- student versions ----

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"


def notebook_paths(src="notebooks"):
    """The course's notebooks in order: 00_*.ipynb, 01_*.ipynb, ..."""
    return sorted(glob.glob(os.path.join(src, NOTEBOOK_GLOB)))


def strip_solutions(source):
    """Replace every solution region of a code cell by a stub that names the function to write."""
    lines, out, inside = source.split("\n"), [], False
    for i, line in enumerate(lines):
        if line.strip() == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN} in:\n{source}")
            inside = True
            indent = line[:len(line) - len(line.lstrip())]
            defs = [re.match(r"\s*def (\w+)", x) for x in lines[:i]]
            name = next((m.group(1) for m in reversed(defs) if m), None)
            what = f"write the body of {name}()" if name else "write your code here"
            out.append(f'{indent}raise NotImplementedError("Exercise: {what}")')
        elif line.strip() == END:
            if not inside:
                raise ValueError(f"{END} without {BEGIN} in:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN} without {END} in:\n{source}")
    return "\n".join(out)


def student_version(nb):
    """A copy of a notebook node without solutions and without outputs."""
    import nbformat
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs, cell.execution_count = [], None
    return nb


def write_student_versions(src="notebooks", dst="build/student"):
    import nbformat
    os.makedirs(dst, exist_ok=True)
    written = []
    for path in notebook_paths(src):
        nb = student_version(nbformat.read(path, as_version=4))
        target = os.path.join(dst, os.path.basename(path))
        nbformat.write(nb, target)
        written.append(target)
    if not written:
        raise ValueError(f"no notebooks matching {NOTEBOOK_GLOB} in {src!r}")
    return written


# ---- the first cell: the course on Google Colab ----

COLAB_FOLDER = "/content/minibert"
COLAB_CELL = """\
# On Google Colab this cell fetches the course and installs its package; anywhere else it does nothing.
import os
import subprocess
import sys

if "google.colab" in sys.modules:
    if not os.path.isdir("{folder}"):
        subprocess.run(["git", "clone", "--depth", "1", "{url}", "{folder}"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-e", "{folder}[notebooks]"], check=True)
    sys.path.insert(0, "{folder}")  # importable now, not only after a restart
    os.chdir("{folder}/notebooks")"""


def repository_url():
    """The repository's address, from the one place it is written: pyproject.toml's [project.urls]."""
    from importlib.metadata import metadata
    for entry in metadata("minibert-course").get_all("Project-URL") or []:
        label, url = (part.strip() for part in entry.split(",", 1))
        if label == "Repository":
            return url
    raise ValueError("pyproject.toml's [project.urls] names no Repository (reinstall the package after editing it)")


def colab_cell():
    """The source of every notebook's first cell."""
    return COLAB_CELL.format(url=repository_url(), folder=COLAB_FOLDER)


def write_colab_cells(src="notebooks"):
    """Put colab_cell() first in every notebook, replacing an older one (after the address changed)."""
    import nbformat
    for path in notebook_paths(src):
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0] if nb.cells else None
        if first is not None and first.cell_type == "code" and first.source.startswith(COLAB_CELL.split("\n")[0]):
            first.source = colab_cell()
        else:
            nb.cells.insert(0, nbformat.v4.new_code_cell(colab_cell()))
        nbformat.write(nb, path)


# ---- the lessons' prose ----

# A lesson is one sitting: at most WORD_BUDGET words of markdown before its exercises, the eleven
# together at most COURSE_WORD_BUDGET. Its prose says what a result means; the result itself (an
# accuracy, a loss, a time) is printed or drawn by a cell, so a rerun on another CPU cannot contradict
# the text. Prose may quote numbers fixed by the setup (15%, 600 steps, 2 layers), a few dozen at most.
WORD_BUDGET = 2000
COURSE_WORD_BUDGET = 20000
NUMBER_BUDGET = 40
EXERCISES_HEADING = re.compile(r"^##\s+\d+\.\s+Exercises", re.M)
NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]+\$|<[^>\n]+>|\]\([^)\n]*\)|^#[^\n]*$", re.S | re.M)
# references to the course's own parts are names, not measurements: notebook 04, notebooks 03-05,
# section 2, exercise 06.1, q3
REFERENCE = re.compile(r"\bnotebooks?\s+\d\d(?:\s*(?:,|-|–|to|and|or)\s*\d\d)*|\bsections?\s+\d+(?:\s*(?:,|and|-)\s*\d+)*"
                       r"|§\s*\d+|\b0\d\.\d+\b|(?:exercises?\s+|\*\*)10\.\d+|\bq\d+\b", re.I)
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+")


def lesson_markdown(nb):
    """The markdown cells of a lesson's main path: everything before its Exercises heading."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if EXERCISES_HEADING.search(cell.source):
                break
            cells.append(cell.source)
    return cells


def prose(markdown):
    """Markdown without code, formulas, HTML, link targets and headings: the sentences a student reads."""
    return NOT_PROSE.sub(" ", markdown)


def prose_words(nb):
    return sum(len(text.split()) for text in lesson_markdown(nb))


def prose_numbers(nb):
    """The numbers a lesson's prose quotes, course references (notebook 04, exercise 06.1) left out."""
    return [n for text in lesson_markdown(nb) for n in NUMBER.findall(REFERENCE.sub(" ", prose(text)))]


def output_text(cell):
    """What a notebook cell showed as text (printed, displayed, or an error), one output a line."""
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(out["text"] if isinstance(out["text"], str) else "".join(out["text"]))
        for kind in ("text/plain", "text/markdown", "text/html"):
            value = out.get("data", {}).get(kind)
            if value:
                parts.append(value if isinstance(value, str) else "".join(value))
        if out.get("output_type") == "error":
            parts.append(f"ERROR {out['ename']}: {out['evalue']}")
    return "\n".join(parts)


def quoted_measurements(nb):
    """Decimal numbers in the notebook's prose that its own outputs print too: a measurement copied
    into the text, which the next run on another machine will contradict."""
    printed = set(DECIMAL.findall("\n".join(output_text(c) for c in nb.cells if c.cell_type == "code")))
    quoted = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            quoted += [n for n in DECIMAL.findall(REFERENCE.sub(" ", prose(cell.source))) if n in printed]
    return quoted


# A run's length said in words goes stale with the next retraining, and differs on every CPU: a cell
# prints it from the run instead. "a minute", "half an hour", "75 minutes", "ten-second", "an hour".
COUNT = r"(?:\d[\d,.]*|an?|half an?|one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty|sixty|" \
        r"seventy|eighty|ninety|hundred|a few|few|several|some|many)"
DURATION = re.compile(rf"\b{COUNT}(?:[\s-]+\w+)?[\s-]+(?:seconds|minutes?|hours?)\b(?!\s+to read)", re.I)  # not reading times
# the properties of a run that a retraining changes, said with their unit: "50,000 steps", "600-step"
RUN_UNITS = r"(?:steps?|epochs?|evaluations?|sequences|examples)"
COUNTED = re.compile(rf"(?<![\w.])(\d[\d,]*(?:\.\d+)?)[\s-]+{RUN_UNITS}\b", re.I)


def stale_facts(nb, facts):
    """Words of the notebook's prose that restate a property of a run or a checkpoint: a duration
    anywhere in its markdown, and in the lesson (the exercises may set their own budgets) a count of
    steps or examples, or a decimal, that one of `facts` holds (a card's score, a run's learning rate).
    `facts`: the numbers of the shipped cards and of the course's runs (run_facts()). Each finding is
    (the words, why)."""
    found = []
    lesson = set(lesson_markdown(nb))
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        text = REFERENCE.sub(" ", prose(cell.source))
        found += [(m.group(0), "a duration") for m in DURATION.finditer(text)]
        if cell.source not in lesson:
            continue
        counted = [m for m in COUNTED.finditer(text) if number_value(m.group(1)) in facts]
        found += [(m.group(0), "a run's length or size") for m in counted]
        inside = {m.start(1) for m in counted}
        found += [(m.group(0), "a number of a card or a run's arguments") for m in DECIMAL.finditer(text)
                  if number_value(m.group(0)) in facts and m.start() not in inside]
    return found


def number_value(text):
    return round(float(text.replace(",", "")), 6)


def run_facts(checkpoints, runs):
    """Every number that a shipped checkpoint's training_args.json and card, or the course's runs'
    settings (`runs`: {objective: settings}) hold: what a lesson must print, never write."""
    import json
    facts = set()

    def add(value):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value not in (0, 1):
            facts.add(round(float(value), 6))
            if isinstance(value, float) and value < 1:
                facts.add(round(100 * value, 6))  # 0.15 is also said as 15
    for name in sorted(os.listdir(checkpoints)):
        folder = os.path.join(checkpoints, name)
        file = os.path.join(folder, "training_args.json")
        if not os.path.isfile(file):
            continue
        with open(file, encoding="utf-8") as f:
            info = json.load(f)
        for value in [*info["args"].values(), info["steps"], info["minutes"]]:
            add(value)
        with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
            facts.update(number_value(n) for n in DECIMAL.findall(f.read()))
    for settings in runs.values():
        for value in settings.values():
            add(value)
    return facts


def prose_report(paths):
    """One line per lesson: words and numbers against their budgets, and any quoted measurement."""
    import nbformat
    total, lines = 0, []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        words, numbers, quoted = prose_words(nb), prose_numbers(nb), quoted_measurements(nb)
        total += words
        lines.append(f"{os.path.basename(path):<40} {words:>5} words (budget {WORD_BUDGET}), {len(numbers):>3} numbers "
                     f"in prose (budget {NUMBER_BUDGET}), quoted measurements: {', '.join(quoted) or 'none'}")
    lines.append(f"{'all':<40} {total:>5} words (budget {COURSE_WORD_BUDGET})")
    return "\n".join(lines)


# ---- the website ----

def notebook_title(nb):
    """The first heading of the first markdown cell."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return "minibert course"


def learning_goals(nb):
    """The numbered list after "**Learning goals.**" in the first cell, one line per goal."""
    first = next(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    m = re.search(r"\*\*Learning goals\.\*\*[^\n]*\n\n(.*?)(?:\n\n|$)", first, re.S)
    if not m:
        return []
    return [re.sub(r"\s*\n\s*", " ", item).strip() for item in re.split(r"(?:^|\n)\d+\. ", m.group(1)) if item.strip()]


# $...$ and $$...$$ outside `code`: LaTeX, which the site turns into MathML (browsers draw it natively;
# a JavaScript renderer would need the network)
MATH = re.compile(r"(`[^`\n]*`)|\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.S)


def render_math(markdown):
    """Markdown with every formula replaced by its MathML."""
    from latex2mathml.converter import convert

    def mathml(m):
        if m.group(1):
            return m.group(1)  # code stays as it is, dollars included
        return convert(m.group(2), display="block") if m.group(2) is not None else convert(m.group(3))
    return MATH.sub(mathml, markdown)


def notebook_summary(nb, limit=300):
    """The first paragraph after the title, as HTML (formulas as MathML): for the table of contents."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            paragraphs = [p.strip() for p in re.split(r"\n\s*\n", cell.source)
                          if p.strip() and not p.lstrip().startswith(("#", "-", "*", "|", "!"))]
            if paragraphs:
                text = " ".join(paragraphs[0].split())
                if len(text) > limit:
                    text = text[:limit].rsplit(" ", 1)[0] + " ..."
                parts = MATH.split(text)  # text, code, display math, inline math, text, ...
                out = []
                for i, part in enumerate(parts):
                    if part is None:
                        continue
                    kind = i % 4  # 0 text, 1 code, 2 display math, 3 inline math
                    out.append(html.escape(re.sub(r"[*_`]", "", part)) if kind in (0, 1)
                               else render_math(f"${part}$"))
                return "".join(out)
    return ""


NAV_STYLE = ("<style>.mb-nav{font:15px system-ui,sans-serif;padding:10px 20px;background:#f3f5f8;"
             "border-bottom:1px solid #d0d7de;display:flex;gap:24px}.mb-nav a{color:#0b5cad;text-decoration:none}"
             "</style>")


def nav_bar(pages, i):
    links = ['<a href="index.html">Contents</a>']
    if i > 0:
        links.append(f'<a href="{pages[i - 1][0]}">&larr; {html.escape(pages[i - 1][1])}</a>')
    if i + 1 < len(pages):
        links.append(f'<a href="{pages[i + 1][0]}">{html.escape(pages[i + 1][1])} &rarr;</a>')
    return f'{NAV_STYLE}<nav class="mb-nav">{"".join(links)}</nav>'


def index_page(entries, figures):
    items = "\n".join(f'<li><a href="{page}"><b>{html.escape(title)}</b></a><p>{summary}</p></li>'
                      for page, title, summary in entries)
    gallery = "\n".join(f'<figure><img src="figures/{name}" alt="{html.escape(name[:-4].replace("_", " "))}">'
                        f'<figcaption>{html.escape(name[:-4].replace("_", " "))}</figcaption></figure>'
                        for name in figures)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>minibert: how language models learn</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#1f2328}}
li{{margin-bottom:.8em}} li p{{margin:.2em 0 0}} a{{color:#0b5cad}}
.gallery{{display:grid;grid-template-columns:repeat(auto-fill,minmax(280px,1fr));gap:16px}}
figure{{margin:0}} figure img{{width:100%;border:1px solid #d0d7de}} figcaption{{font-size:14px;color:#57606a}}</style>
</head><body>
<h1>minibert: how language models learn</h1>
<p>A course in notebooks on the three classic pretraining objectives (next-token prediction, masked language
modeling and next sentence prediction), with a compact BERT that is interchangeable with transformers' BERT.
Each page below is a notebook, run top to bottom on a laptop CPU.</p>
<h2>Contents</h2>
<ol>
{items}
</ol>
<h2>Pictures</h2>
<div class="gallery">
{gallery}
</div>
</body></html>
"""


def build_site(src="notebooks", dst="build/site", figures="figures"):
    """Render the executed notebooks to HTML pages with navigation, an index and the figures."""
    import nbformat
    from nbconvert import HTMLExporter
    paths = notebook_paths(src)
    if not paths:
        raise ValueError(f"no notebooks matching {NOTEBOOK_GLOB} in {src!r}")
    os.makedirs(dst, exist_ok=True)
    notebooks = [nbformat.read(p, as_version=4) for p in paths]
    pages = [(os.path.basename(p)[:-6] + ".html", notebook_title(nb)) for p, nb in zip(paths, notebooks)]
    exporter = HTMLExporter(template_name="lab")
    for i, nb in enumerate(notebooks):
        nb = nbformat.from_dict(nb)  # a copy: formulas become MathML on the page only
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = render_math(cell.source)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": pages[i][1]}})
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav_bar(pages, i), body, count=1)
        with open(os.path.join(dst, pages[i][0]), "w", encoding="utf-8") as f:
            f.write(body)
    pictures = sorted(f for f in os.listdir(figures) if f.endswith(".png")) if os.path.isdir(figures) else []
    if pictures:
        os.makedirs(os.path.join(dst, "figures"), exist_ok=True)
        for name in pictures:
            shutil.copy2(os.path.join(figures, name), os.path.join(dst, "figures", name))
    entries = [(page, title, notebook_summary(nb)) for (page, title), nb in zip(pages, notebooks)]
    with open(os.path.join(dst, "index.html"), "w", encoding="utf-8") as f:
        f.write(index_page(entries, pictures))
    return [os.path.join(dst, "index.html")] + [os.path.join(dst, page) for page, _ in pages]
