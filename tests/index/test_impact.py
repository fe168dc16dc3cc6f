"""Import graph: edges resolved to repository files, inbound/outbound, diagnostics."""

from __future__ import annotations

from codeloop.index import CodeIndex


def test_python_relative_absolute_and_from_imports(built: CodeIndex) -> None:
    report = built.impact("pkg/core.py")
    assert report.inbound == ("app.py",)
    assert {"pkg/helpers.py", "pkg/models.py"} <= set(report.outbound)
    assert built.impact("pkg/helpers.py").inbound == ("pkg/core.py",)


def test_js_ts_imports_extensions_index_and_js_to_ts_mapping(built: CodeIndex) -> None:
    main = built.impact("web/src/main.ts")
    assert main.outbound == ("web/src/lazy.js", "web/src/util.ts")
    assert main.inbound == ("web/src/view.tsx",)


def test_go_module_import_resolves_to_package_files(built: CodeIndex) -> None:
    assert built.impact("go/main.go").outbound == ("go/store/store.go",)
    assert built.impact("go/store/store.go").inbound == ("go/main.go",)


def test_rust_mod_and_use_paths(built: CodeIndex) -> None:
    assert built.impact("rust/src/lib.rs").outbound == ("rust/src/parser.rs",)
    assert built.impact("rust/src/parser.rs").outbound == ("rust/src/lib.rs",)


def test_diagnostics_list_unresolved_and_dynamic_imports(built: CodeIndex) -> None:
    found = {(d.source, d.line, d.specifier, d.status) for d in built.diagnostics()}
    assert found == {
        ("pkg/core.py", 11, "", "dynamic"),
        ("pkg/helpers.py", 2, ".nothere", "unresolved"),
        ("web/src/main.ts", 3, "./lazy", "dynamic"),
        ("web/src/lazy.js", 2, "", "dynamic"),
    }


def test_external_packages_are_reported_as_external_not_unresolved(built: CodeIndex) -> None:
    statuses = {e.specifier: e.status for e in built.imports("pkg/helpers.py")}
    assert statuses == {"requests": "external", ".nothere": "unresolved"}
    diag = {d.specifier: d.status for d in built.impact("web/src/main.ts").diagnostics}
    assert diag["react"] == "external"


def test_imports_of_a_file_carry_their_targets(built: CodeIndex) -> None:
    edges = {e.specifier: e.targets for e in built.imports("web/src/view.tsx")}
    assert edges == {"./main.js": ("web/src/main.ts",)}
