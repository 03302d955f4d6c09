"""The harness that runs Snakemake in the test process (support.workflow.in_process) keeps each rule file's
translation to Python: the kept one must be Snakemake's own, at any copy's path."""

from types import SimpleNamespace

import pytest
from snakemake import parser
from snakemake.sourcecache import SourceCache, infer_source_file

from support.workflow import WorkflowCopy, translate_once

pytestmark = pytest.mark.dag


def _rule_files(root):
    return [root / "Snakefile", *sorted((root / "workflow/rules").glob("*.smk"))]


def test_a_kept_translation_is_snakemakes_own_at_another_copys_path(tmp_path):
    first, second = WorkflowCopy(tmp_path / "first"), WorkflowCopy(tmp_path / "second")
    workflow = SimpleNamespace(sourcecache=SourceCache(tmp_path / "sources"))
    calls = []

    def counted(*args):
        calls.append(args[0])
        return parser.parse(*args)

    kept = translate_once(counted)
    files = _rule_files(first.root)
    for path in files:
        kept(infer_source_file(str(path)), workflow, {}, None, 7)
    assert len(calls) == len(files) > 10
    for path in _rule_files(second.root):
        source = infer_source_file(str(path))
        lines, own_lines = {}, {}
        own = parser.parse(source, workflow, own_lines, None, 7)
        assert kept(source, workflow, lines, None, 7) == own, path
        assert lines == own_lines
        if "\nrule " in path.read_text():  # a rule names its file: this copy's, not the first's
            code = kept(source, workflow, {}, None, 7)[0]
            assert str(path) in code and str(first.root) not in code, path
    assert len(calls) == len(files)  # the second copy's files were not translated again
    # another rule count before the file, or another text, is translated afresh
    kept(infer_source_file(str(second.root / "Snakefile")), workflow, {}, None, 8)
    rules = second.root / "workflow/rules/llm.smk"
    rules.write_text(rules.read_text() + "\n# a comment\n")
    kept(infer_source_file(str(rules)), workflow, {}, None, 7)
    assert len(calls) == len(files) + 2


def test_a_file_naming_its_own_path_or_at_a_path_a_literal_escapes_is_translated_each_time(tmp_path):
    workflow = SimpleNamespace(sourcecache=SourceCache(tmp_path / "sources"))
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(f'rule a:\n    output: "{snakefile}.out"\n    shell: "touch {{output}}"\n')
    quoted = tmp_path / "back\\slash" / "Snakefile"  # named in the translation with the backslash doubled
    quoted.parent.mkdir()
    quoted.write_text('rule b:\n    output: "b.out"\n    shell: "touch {output}"\n')
    calls = []
    kept = translate_once(lambda *args: calls.append(1) or parser.parse(*args))
    for _ in range(2):
        kept(infer_source_file(str(snakefile)), workflow, {}, None, 0)
        kept(infer_source_file(str(quoted)), workflow, {}, None, 0)
    assert len(calls) == 4
