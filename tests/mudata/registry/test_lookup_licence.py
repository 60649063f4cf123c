"""Licences in the registry: SPDX ids (checked against the schema's list) or LicenseRef- terms."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from mudata.cli import main
from mudata.errors import RegistryError
from mudata.registry.lookup import load_registry, parse_entry, spdx_titles
from tests.mudata.registry.test_lookup import _minimal


def parse_with(licence: object):
    return parse_entry({**_minimal(), "licence": licence}, source="registry/tiny.toml")


def test_an_spdx_id_gets_its_spdx_name_and_page() -> None:
    entry = parse_with("CC-BY-4.0")
    assert entry.licence == "CC-BY-4.0"
    assert entry.licence_title == "Creative Commons Attribution 4.0 International"
    assert entry.licence_path == "https://spdx.org/licenses/CC-BY-4.0.html"


def test_a_table_names_custom_terms() -> None:
    entry = parse_with(
        {"name": "LicenseRef-own-terms", "title": "Research only", "path": "https://example.org/t"}
    )
    assert (entry.licence, entry.licence_title, entry.licence_path) == (
        "LicenseRef-own-terms",
        "Research only",
        "https://example.org/t",
    )
    spdx = parse_with({"name": "ODbL-1.0", "title": "ODbL"})  # an SPDX id with a title of one's own
    assert (spdx.licence_title, spdx.licence_path) == (
        "ODbL",
        "https://spdx.org/licenses/ODbL-1.0.html",
    )


@pytest.mark.parametrize(
    ("licence", "expected"),
    [
        (
            "CC BY 4.0",
            "field 'licence': 'CC BY 4.0' is not an SPDX licence id accepted here. Did you mean 'CC-BY-4.0'? ",
        ),
        ("cc0-1.0", "Did you mean 'CC0-1.0'? "),
        ("CC-BY-4", "Did you mean 'CC-BY-4.0', "),
        ("Research or academic use only", "LicenseRef-<short-name>"),
        (
            "LicenseRef-own",
            "'LicenseRef-own' is not an SPDX licence id",
        ),  # custom terms need a title
        ({"name": "LicenseRef-own"}, "field 'licence': 'title' is a required property"),
        (
            {"name": "CC BY", "title": "x"},
            "field 'licence.name': 'CC BY' is not an SPDX licence id",
        ),
        ({"name": "LicenseRef-a b", "title": "x"}, "field 'licence.name'"),
        ({"name": "MIT", "title": "x", "path": "file:///etc/passwd"}, "field 'licence.path'"),
        ({"name": "MIT", "title": "x", "url": "https://x"}, "'url' was unexpected"),
    ],
)
def test_a_bad_licence_names_the_field_and_the_fix(licence: object, expected: str) -> None:
    with pytest.raises(RegistryError) as caught:
        parse_with(licence)
    assert "registry/tiny.toml" in str(caught.value)
    assert expected in str(caught.value)


def test_the_schema_list_holds_spdx_ids_with_titles() -> None:
    titles = spdx_titles()
    assert {
        "CC-BY-4.0",
        "CC-BY-SA-4.0",
        "CC0-1.0",
        "ODbL-1.0",
        "PDDL-1.0",
        "MIT",
        "Apache-2.0",
    } <= set(titles)
    for spdx_id, title in titles.items():
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.+-]*", spdx_id) and not spdx_id.startswith(
            "LicenseRef-"
        )
        assert title and title != spdx_id


def test_every_builtin_entry_has_an_spdx_or_licenseref_licence_with_a_title() -> None:
    entries = load_registry()
    assert {name: e.licence for name, e in entries.items()}.items() >= {
        "har70": "CC-BY-4.0",
        "opportunity": "CC-BY-4.0",
        "wisdm": "LicenseRef-WISDM-v1.1",
        "gestures": "LicenseRef-Smartwatch-Gestures-research-only",
    }.items()
    for entry in entries.values():
        assert entry.licence in spdx_titles() or entry.licence.startswith("LicenseRef-")
        assert entry.licence_title and entry.licence_path
    assert "readme.txt" in entries["wisdm"].licence_title


def test_info_shows_id_title_and_where_the_terms_are() -> None:
    result = CliRunner().invoke(main, ["info", "gestures"])
    assert result.exit_code == 0
    assert (
        "licence:   LicenseRef-Smartwatch-Gestures-research-only (Research or academic use only; "
        "cite Costante et al. (2014)), https://tev.fbk.eu/resources/smartwatch"
    ) in result.output
