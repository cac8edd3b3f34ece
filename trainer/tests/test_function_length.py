"""No product function in trainer/src is longer than 80 lines, decorators and docstring included:
the Python half of the project's function-length rule (ESLint's max-lines-per-function for TypeScript).
ruff's PLR0915 (too many statements) catches most long bodies as they are written; this catches all."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 80


def long_functions(root: Path, max_lines: int) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = node.end_lineno - start + 1
                if lines > max_lines:
                    found.append(f"{path.relative_to(root)}:{start} {node.name} is {lines} lines")
    return found


def test_no_function_is_longer_than_80_lines():
    assert long_functions(SRC, MAX_LINES) == []


def test_the_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def short():\n    return 1\n\n\n@staticmethod\ndef long():\n{body}\n")
    assert long_functions(tmp_path, MAX_LINES) == [f"long.py:5 long is {MAX_LINES + 2} lines"]
