"""The admin edits agents, section declarations and authored entries with the API's rules."""

from __future__ import annotations

from html import unescape
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.models import Agent, AuthoredEntry, SectionDeclaration, Team

pytestmark = pytest.mark.django_db

FormData = dict[str, list[str]]


class FormParser(HTMLParser):
    """What a browser would submit from the form with id ``form_id`` (no button pressed)."""

    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.data: FormData = {}
        self._in_form = False
        self._select: str | None = None
        self._select_first: str | None = None
        self._select_chosen = False
        self._textarea: str | None = None
        self._textarea_text = ""
        self._option: dict[str, str | None] | None = None
        self._option_text = ""

    def _add(self, name: str, value: str) -> None:
        # Empty-form templates for "Add another" rows are never submitted as they are.
        if "__prefix__" not in name:
            self.data.setdefault(name, []).append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "form":
            self._in_form = attributes.get("id") == self.form_id
            return
        if not self._in_form:
            return
        name = attributes.get("name")
        if tag == "input" and name:
            kind = (attributes.get("type") or "text").lower()
            if kind in ("submit", "button", "image", "reset", "file"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attributes:
                return
            default = "on" if kind in ("checkbox", "radio") else ""
            self._add(name, attributes.get("value") or default)
        elif tag == "textarea" and name:
            self._textarea, self._textarea_text = name, ""
        elif tag == "select" and name:
            self._select, self._select_first, self._select_chosen = name, None, False
        elif tag == "option" and self._select:
            self._option, self._option_text = attributes, ""

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self._textarea_text += data
        elif self._option is not None:
            self._option_text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "textarea" and self._textarea:
            value = self._textarea_text
            # A newline right after <textarea> is not part of the value.
            self._add(self._textarea, value[1:] if value.startswith("\n") else value)
            self._textarea = None
        elif tag == "option" and self._select and self._option is not None:
            # An <option> without a value attribute submits its text.
            attribute = self._option.get("value")
            value = self._option_text if attribute is None else attribute
            if self._select_first is None:
                self._select_first = value
            if "selected" in self._option and not self._select_chosen:
                self._add(self._select, value)
                self._select_chosen = True
            self._option = None
        elif tag == "select" and self._select:
            if not self._select_chosen and self._select_first is not None:
                self._add(self._select, self._select_first)
            self._select = None


def form_data(client: Client, url: str, form_id: str) -> FormData:
    response = client.get(url)
    assert response.status_code == 200
    parser = FormParser(form_id)
    parser.feed(response.content.decode())
    parser.close()
    assert parser.data, f"no form {form_id!r} on {url}"
    return parser.data


def put(data: FormData, name: str, value: str) -> None:
    data[name] = [value]


def total(data: FormData, prefix: str) -> int:
    return int(data[f"{prefix}-TOTAL_FORMS"][0])


def add_row(data: FormData, prefix: str, **fields: str) -> int:
    """Append a new inline row (what "Add another" does) and return its index."""
    index = total(data, prefix)
    put(data, f"{prefix}-TOTAL_FORMS", str(index + 1))
    for name, value in fields.items():
        put(data, f"{prefix}-{index}-{name}", value)
    return index


def first_blank_row(data: FormData, prefix: str) -> int:
    """The index of the extra row the admin renders empty."""
    for index in range(total(data, prefix)):
        if not data.get(f"{prefix}-{index}-id", [""])[0]:
            return index
    raise AssertionError(f"no blank {prefix} row")


def agent_url(agent: Agent) -> str:
    return f"/admin/lens/agent/{agent.pk}/change/"


def section_url(section: SectionDeclaration) -> str:
    return f"/admin/lens/sectiondeclaration/{section.pk}/change/"


@pytest.fixture
def admin_client(db: None) -> Client:
    user = User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ground_rules(agent: Agent) -> SectionDeclaration:
    return agent.sections.get(section_id="ground_rules")


def assert_refused(response: Any, message: str) -> None:
    assert response.status_code == 200, "the form was accepted"
    html = response.content.decode()
    assert "errorlist" in html
    assert message in unescape(html)


# --- pages load ------------------------------------------------------------------------


def test_the_agent_changelist_loads(admin_client: Client, agent: Agent) -> None:
    response = admin_client.get("/admin/lens/agent/")
    assert response.status_code == 200
    assert "Wren" in response.content.decode()


def test_the_agent_change_page_loads_with_its_inlines(admin_client: Client, agent: Agent) -> None:
    response = admin_client.get(agent_url(agent))
    assert response.status_code == 200
    html = response.content.decode()
    for prefix in ("sections", "capabilities", "awareness_sources"):
        assert f'name="{prefix}-TOTAL_FORMS"' in html
    assert 'value="ground_rules"' in html


def test_the_agent_add_page_loads(admin_client: Client, team: Team) -> None:
    assert admin_client.get("/admin/lens/agent/add/").status_code == 200


def test_the_section_pages_load_with_the_entries_inline(
    admin_client: Client, ground_rules: SectionDeclaration
) -> None:
    assert admin_client.get("/admin/lens/sectiondeclaration/").status_code == 200
    response = admin_client.get(section_url(ground_rules))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="entries-TOTAL_FORMS"' in html
    assert 'value="privacy"' in html


def test_the_team_pages_load(admin_client: Client, team: Team, member: User) -> None:
    assert admin_client.get("/admin/lens/team/").status_code == 200
    assert admin_client.get(f"/admin/lens/team/{team.pk}/change/").status_code == 200


# --- agent form: section declarations inline -------------------------------------------


@pytest.fixture
def agent_form(admin_client: Client, agent: Agent) -> FormData:
    return form_data(admin_client, agent_url(agent), "agent_form")


def new_section(agent: Agent, section_id: str, title: str = "Notes") -> dict[str, str]:
    return {
        "section_id": section_id,
        "title": title,
        "promotion": "locked",
        "position": "9",
        "agent": str(agent.pk),
        "id": "",
    }


def test_the_unchanged_agent_form_saves(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    # The baseline every refusal below starts from must itself be valid.
    response = admin_client.post(agent_url(agent), agent_form)
    assert response.status_code == 302
    assert agent.sections.count() == 2


def test_a_valid_new_section_saves(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **new_section(agent, "notes"))
    response = admin_client.post(agent_url(agent), agent_form)
    assert response.status_code == 302
    assert agent.sections.filter(section_id="notes", title="Notes").exists()


@pytest.mark.parametrize(
    ("section_id", "title", "message"),
    [
        ("Bad Id", "Notes", "must start with a lowercase letter or digit"),
        ("-dash", "Notes", "must start with a lowercase letter or digit"),
        ("notes", "Current State", "reserved for continuation turns"),
        ("notes", "  current state ", "reserved for continuation turns"),
        ("notes", "   ", "This field is required"),
    ],
)
def test_an_invalid_section_is_refused_and_nothing_is_saved(
    admin_client: Client,
    agent: Agent,
    agent_form: FormData,
    section_id: str,
    title: str,
    message: str,
) -> None:
    put(agent_form, "name", "Renamed")
    add_row(agent_form, "sections", **new_section(agent, section_id, title))
    response = admin_client.post(agent_url(agent), agent_form)
    assert_refused(response, message)
    assert agent.sections.count() == 2
    agent.refresh_from_db()
    assert agent.name == "Wren"


def test_two_new_sections_with_one_id_are_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **new_section(agent, "notes", "Notes"))
    add_row(agent_form, "sections", **new_section(agent, "notes", "More notes"))
    response = admin_client.post(agent_url(agent), agent_form)
    assert_refused(response, "duplicate section id 'notes'")
    assert agent.sections.count() == 2
    assert not agent.sections.filter(section_id="notes").exists()


def test_a_new_section_reusing_a_declared_id_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(agent_form, "sections", **new_section(agent, "ground_rules", "Again"))
    response = admin_client.post(agent_url(agent), agent_form)
    assert_refused(response, "duplicate section id 'ground_rules'")
    assert agent.sections.count() == 2
    assert not agent.sections.filter(title="Again").exists()


def test_renaming_a_section_to_the_reserved_title_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    row = next(
        i
        for i in range(total(agent_form, "sections"))
        if agent_form[f"sections-{i}-section_id"] == ["user_profile"]
    )
    put(agent_form, f"sections-{row}-title", "Current State")
    response = admin_client.post(agent_url(agent), agent_form)
    assert_refused(response, "reserved for continuation turns")
    assert agent.sections.get(section_id="user_profile").title == "About the User"


def test_two_sections_can_swap_ids_in_one_save(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    rows = {
        agent_form[f"sections-{i}-section_id"][0]: i for i in range(total(agent_form, "sections"))
    }
    put(agent_form, f"sections-{rows['user_profile']}-section_id", "ground_rules")
    put(agent_form, f"sections-{rows['ground_rules']}-section_id", "user_profile")
    response = admin_client.post(agent_url(agent), agent_form)
    assert response.status_code == 302
    assert agent.sections.get(section_id="ground_rules").title == "About the User"


def test_an_unknown_routing_spec_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "routing_spec", "nope")
    response = admin_client.post(agent_url(agent), agent_form)
    assert_refused(response, "Unknown routing spec")
    agent.refresh_from_db()
    assert agent.routing_spec is None


def test_a_blank_agent_name_is_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "name", "   ")
    response = admin_client.post(agent_url(agent), agent_form)
    assert response.status_code == 200
    assert "errorlist" in response.content.decode()
    agent.refresh_from_db()
    assert agent.name == "Wren"


def test_duplicate_capability_names_are_refused(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    add_row(
        agent_form,
        "capabilities",
        name="memory_save",
        description="again",
        position="1",
        agent=str(agent.pk),
        id="",
    )
    response = admin_client.post(agent_url(agent), agent_form)
    assert_refused(response, "duplicate name 'memory_save'")
    assert agent.capabilities.count() == 1


# --- section form: authored entries inline ---------------------------------------------


@pytest.fixture
def section_form(admin_client: Client, ground_rules: SectionDeclaration) -> FormData:
    return form_data(admin_client, section_url(ground_rules), "sectiondeclaration_form")


def fill_blank_entry(data: FormData, key: str, value_type: str, value_text: str) -> None:
    row = first_blank_row(data, "entries")
    put(data, f"entries-{row}-key", key)
    put(data, f"entries-{row}-value_type", value_type)
    put(data, f"entries-{row}-value_text", value_text)


def test_the_unchanged_section_form_saves_and_keeps_value_types(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    response = admin_client.post(section_url(ground_rules), section_form)
    assert response.status_code == 302
    values = {entry.key: entry.value for entry in ground_rules.entries.all()}
    assert values == {
        "privacy": "Never share what the user says.",
        "check_in_hour": 9,
        "ratio": 2.5,
        "proactive": True,
    }
    assert type(values["check_in_hour"]) is int
    assert values["proactive"] is True


def test_a_valid_text_entry_saves(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    fill_blank_entry(section_form, "motto", "text", "Be kind & brief")
    response = admin_client.post(section_url(ground_rules), section_form)
    assert response.status_code == 302
    assert ground_rules.entries.get(key="motto").value == "Be kind & brief"


@pytest.mark.parametrize(
    ("value_type", "value_text", "expected"),
    [
        ("boolean", "true", True),
        ("boolean", " False ", False),
        ("integer", "42", 42),
        ("number", "2.5", 2.5),
        ("text", "true", "true"),
    ],
)
def test_typed_values_save_as_real_scalars(
    admin_client: Client,
    ground_rules: SectionDeclaration,
    section_form: FormData,
    value_type: str,
    value_text: str,
    expected: object,
) -> None:
    fill_blank_entry(section_form, "typed", value_type, value_text)
    response = admin_client.post(section_url(ground_rules), section_form)
    assert response.status_code == 302
    value = AuthoredEntry.objects.get(section=ground_rules, key="typed").value
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("value_type", "value_text", "message"),
    [
        ("integer", "abc", "is not an integer"),
        ("integer", "2.5", "is not an integer"),
        ("number", "nan", "numbers must be finite"),
        ("number", "x", "is not a number"),
        ("boolean", "yes", "a boolean is"),
    ],
)
def test_a_value_that_does_not_parse_is_refused_and_nothing_is_saved(
    admin_client: Client,
    ground_rules: SectionDeclaration,
    section_form: FormData,
    value_type: str,
    value_text: str,
    message: str,
) -> None:
    put(section_form, "title", "Renamed")
    fill_blank_entry(section_form, "broken", value_type, value_text)
    response = admin_client.post(section_url(ground_rules), section_form)
    assert_refused(response, message)
    assert ground_rules.entries.count() == 4
    ground_rules.refresh_from_db()
    assert ground_rules.title == "Ground Rules"


def test_duplicate_entry_keys_are_refused(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    fill_blank_entry(section_form, "twin", "text", "one")
    add_row(
        section_form,
        "entries",
        key="twin",
        value_type="text",
        value_text="two",
        position="0",
        section=str(ground_rules.pk),
        id="",
    )
    response = admin_client.post(section_url(ground_rules), section_form)
    assert_refused(response, "duplicate entry key 'twin'")
    assert ground_rules.entries.count() == 4
    assert not ground_rules.entries.filter(key="twin").exists()


def test_a_new_entry_reusing_a_key_is_refused(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    fill_blank_entry(section_form, "privacy", "text", "again")
    response = admin_client.post(section_url(ground_rules), section_form)
    assert_refused(response, "duplicate entry key 'privacy'")
    assert ground_rules.entries.get(key="privacy").value == "Never share what the user says."


def test_an_edited_entry_changes_type(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    row = next(
        i
        for i in range(total(section_form, "entries"))
        if section_form.get(f"entries-{i}-key") == ["check_in_hour"]
    )
    assert section_form[f"entries-{row}-value_type"] == ["integer"]
    assert section_form[f"entries-{row}-value_text"] == ["9"]
    put(section_form, f"entries-{row}-value_type", "text")
    put(section_form, f"entries-{row}-value_text", "nine")
    response = admin_client.post(section_url(ground_rules), section_form)
    assert response.status_code == 302
    assert ground_rules.entries.get(key="check_in_hour").value == "nine"


def test_an_invalid_section_id_is_refused_on_the_section_form(
    admin_client: Client, ground_rules: SectionDeclaration, section_form: FormData
) -> None:
    put(section_form, "section_id", "Bad Id")
    response = admin_client.post(section_url(ground_rules), section_form)
    assert_refused(response, "must start with a lowercase letter or digit")
    ground_rules.refresh_from_db()
    assert ground_rules.section_id == "ground_rules"
