"""The package's import graph, read from its sources: which trainproof module imports which."""

from __future__ import annotations


def _import_graph() -> dict[str, set[str]]:
    """trainproof's modules and the trainproof modules each imports anywhere in its source
    (module level or inside a function), read from the source, not by importing it."""
    import ast
    from pathlib import Path

    import trainproof

    root = Path(trainproof.__file__).parent.parent
    files = {}
    for f in (root / "trainproof").rglob("*.py"):
        parts = list(f.relative_to(root).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph: dict[str, set[str]] = {m: set() for m in files}
    for m, f in files.items():
        package = m if f.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            graph[m] |= {n for n in names if n in files and n != m}
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for n in graph[todo.pop()] - seen:
            seen.add(n)
            todo.append(n)
    return seen
