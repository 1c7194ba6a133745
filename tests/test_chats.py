"""Chat history kept on the server, per user: conversations and
their messages over HTTP, through the service's real app
(tests/service_app.py) on SQLite and PostgreSQL.

Only the owner ever sees a conversation (everyone else 404, the domain's
admin and superadmins too); bounds are clear 4xx naming the field; a
conversation's endpoint must be one its owner may use when chosen, and a
conversation whose endpoint was deleted still reads.

The world (tests/conftest.py): alice is a member of acme/ml, bob of no
project, ada the domain admin of acme, root a superadmin, gina a user of
globex.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from quota_service.core.chatmodels import Chat, ChatMessage
from quota_service.core.chatschemas import MAX_APPEND, MAX_CONTENT
from quota_service.core.models import AuditEntry, User
from quota_service.serving import chats as manager
from service_app import served  # noqa: F401
from serving_world import CHAT, IMAGE, ServingEnv, infer_world

class Env(ServingEnv):
    """The served service with a resource group ``infer`` granted to acme
    and the inference image."""

    async def endpoint(self) -> dict:
        """An endpoint of acme/ml made by alice (no replica ever runs here)."""
        folder = await self.folder_with("alice", CHAT, name=f"m-{uuid.uuid4().hex[:6]}")
        return await self.ok("POST", "endpoints", "alice", 201, {
            "name": f"ep-{uuid.uuid4().hex[:6]}", "project": "ml", "resource_group": "infer",
            "image": IMAGE, "model_folder": folder, "slots": {"cpu": "1", "mem": "1G"},
            "replicas": 0})


@pytest.fixture
async def env(served):  # noqa: F811
    e = Env(served)
    await infer_world(e)
    return e


async def test_a_conversation_is_made_appended_to_and_read_back_in_order(env):
    ep = await env.endpoint()
    chat = await env.ok("POST", "chats", "alice", 201, {
        "endpoint": ep["id"], "model": ep["name"],
        "messages": [{"role": "system", "content": "be brief"}]})
    assert chat["title"] == "New chat" and chat["owner"] == "alice"
    assert chat["endpoint"] == ep["id"] and chat["endpoint_name"] == ep["name"]
    assert chat["endpoint_gone"] is False
    assert [m["seq"] for m in chat["messages"]] == [1]
    added = await env.ok("POST", f"chats/{chat['id']}/messages", "alice", 200, {"messages": [
        {"role": "user", "content": "hello <b>there</b>"},
        {"role": "assistant", "content": "echo: hello <b>there</b>"}]})
    assert [(m["seq"], m["role"]) for m in added] == [(2, "user"), (3, "assistant")]
    await env.ok("POST", f"chats/{chat['id']}/messages", "alice", 200,
                 {"messages": [{"role": "user", "content": "again"}]})
    got = await env.ok("GET", f"chats/{chat['id']}", "alice", 200)
    assert [(m["seq"], m["content"]) for m in got["messages"]] == [
        (1, "be brief"), (2, "hello <b>there</b>"), (3, "echo: hello <b>there</b>"),
        (4, "again")]
    assert got["messages_count"] == 4 and got["updated_at"] >= chat["updated_at"]


async def test_the_list_has_the_callers_conversations_only_most_recent_first(env):
    first = await env.ok("POST", "chats", "alice", 201, {"title": "first"})
    second = await env.ok("POST", "chats", "alice", 201, {"title": "second"})
    await env.ok("POST", "chats", "bob", 201, {"title": "bob's"})
    await env.ok("POST", f"chats/{first['id']}/messages", "alice", 200,
                 {"messages": [{"role": "user", "content": "x"}]})
    listed = await env.ok("GET", "chats", "alice", 200)
    assert [c["id"] for c in listed] == [first["id"], second["id"]]
    assert "messages" not in listed[0] and listed[0]["messages_count"] == 1
    assert [c["title"] for c in await env.ok("GET", "chats", "root", 200)] == []


@pytest.mark.parametrize("other", ["bob", "ada", "root", "gina"])
async def test_nobody_but_the_owner_sees_or_touches_a_conversation_whatever_their_role(env, other):
    chat = await env.ok("POST", "chats", "alice", 201, {"title": "mine"})
    path = f"chats/{chat['id']}"
    for method, body in (("GET", None), ("PATCH", {"title": "theirs"}), ("DELETE", None)):
        r, data = await env.call(method, path, other, body)
        assert r.code == 404 and data["message"] == f"conversation {chat['id']!r} not found"
    r, _ = await env.call("POST", path + "/messages", other,
                          {"messages": [{"role": "user", "content": "hi"}]})
    assert r.code == 404
    # the same answer as for one that does not exist
    r, data = await env.call("GET", f"chats/{uuid.uuid4().hex}", other)
    assert r.code == 404
    got = await env.ok("GET", path, "alice", 200)
    assert got["title"] == "mine" and got["messages"] == []
    with env.world.session_factory() as s:
        denied = list(s.scalars(sa.select(AuditEntry).where(AuditEntry.actor == other,
                                                            AuditEntry.outcome == "denied")))
    assert {e.action for e in denied} >= {"chat.read", "chat.update", "chat.delete",
                                          "chat.append"}


async def test_rename_and_a_new_model_then_delete_takes_the_messages(env):
    chat = await env.ok("POST", "chats", "alice", 201,
                        {"messages": [{"role": "user", "content": "hi"}]})
    renamed = await env.ok("PATCH", f"chats/{chat['id']}", "alice", 200,
                           {"title": "Renamed", "model": "other"})
    assert renamed["title"] == "Renamed" and renamed["model"] == "other"
    await env.ok("DELETE", f"chats/{chat['id']}", "alice", 204)
    await env.ok("GET", f"chats/{chat['id']}", "alice", 404)
    assert env.world.count(Chat) == 0 and env.world.count(ChatMessage) == 0
    actions = {e for e in _actions(env, "alice")}
    assert {"chat.create", "chat.update", "chat.delete"} <= actions


def _actions(env, actor):
    with env.world.session_factory() as s:
        return list(s.scalars(sa.select(AuditEntry.action).where(AuditEntry.actor == actor)))


async def test_appending_messages_is_not_in_the_access_log(env):
    chat = await env.ok("POST", "chats", "alice", 201, {})
    await env.ok("POST", f"chats/{chat['id']}/messages", "alice", 200,
                 {"messages": [{"role": "user", "content": "hi"}]})
    assert "chat.append" not in _actions(env, "alice")


async def test_a_conversation_whose_endpoint_is_gone_still_reads(env):
    ep = await env.endpoint()
    chat = await env.ok("POST", "chats", "alice", 201, {
        "endpoint": ep["id"], "model": ep["name"],
        "messages": [{"role": "user", "content": "hello"}]})
    await env.ok("DELETE", f"endpoints/{ep['id']}", "alice", 204)
    got = await env.ok("GET", f"chats/{chat['id']}", "alice", 200)
    assert got["endpoint_gone"] is True and got["endpoint_name"] == ep["name"]
    assert [m["content"] for m in got["messages"]] == ["hello"]
    [listed] = await env.ok("GET", "chats", "alice", 200)
    assert listed["endpoint_gone"] is True


async def test_an_endpoint_the_caller_may_not_use_is_refused_with_its_field(env):
    ep = await env.endpoint()
    for body in ({"endpoint": ep["id"]}, {"endpoint": uuid.uuid4().hex}):
        r, data = await env.call("POST", "chats", "bob", body)  # bob: no member of ml
        assert r.code == 422 and data["message"].startswith("endpoint: no endpoint")
    mine = await env.ok("POST", "chats", "bob", 201, {})
    r, data = await env.call("PATCH", f"chats/{mine['id']}", "bob", {"endpoint": ep["id"]})
    assert r.code == 422 and data["message"].startswith("endpoint: ")
    assert env.world.count(Chat) == 1


@pytest.mark.parametrize("body,field", [
    ({"title": "x" * 201}, "title"),
    ({"title": ""}, "title"),
    ({"endpoint": "not-an-id"}, "endpoint"),
    ({"model": "m" * 256}, "model"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages.0.role"),
    ({"messages": [{"role": "user", "content": "x" * (MAX_CONTENT + 1)}]},
     "messages.0.content"),
    ({"messages": [{"role": "user", "content": "x"}] * (MAX_APPEND + 1)}, "messages"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
    ({"owner": "bob"}, "owner"),
])
async def test_bad_input_is_a_422_naming_the_field_and_writes_nothing(env, body, field):
    r, data = await env.call("POST", "chats", "alice", body)
    assert r.code == 422 and data["message"].startswith(field + ":"), data
    assert env.world.count(Chat) == 0


async def test_an_empty_append_is_refused(env):
    chat = await env.ok("POST", "chats", "alice", 201, {})
    r, data = await env.call("POST", f"chats/{chat['id']}/messages", "alice", {"messages": []})
    assert r.code == 422 and data["message"].startswith("messages:")


async def test_the_counts_are_bounded_with_a_409_that_says_what_to_do(env, monkeypatch):
    monkeypatch.setattr(manager, "MAX_CHATS", 2)
    monkeypatch.setattr(manager, "MAX_MESSAGES", 3)
    chat = await env.ok("POST", "chats", "alice", 201,
                        {"messages": [{"role": "user", "content": "1"}] * 2})
    r, data = await env.call("POST", f"chats/{chat['id']}/messages", "alice",
                             {"messages": [{"role": "user", "content": "x"}] * 2})
    assert r.code == 409 and "at most 3 messages" in data["message"]
    await env.ok("POST", f"chats/{chat['id']}/messages", "alice", 200,
                 {"messages": [{"role": "assistant", "content": "3"}]})
    await env.ok("POST", "chats", "alice", 201, {})
    r, data = await env.call("POST", "chats", "alice", {})
    assert r.code == 409 and "at most 2 conversations" in data["message"]
    assert env.world.count(Chat) == 2 and env.world.count(ChatMessage) == 3


async def test_deleting_the_user_deletes_their_conversations(env):
    await env.ok("POST", "chats", "bob", 201, {"messages": [{"role": "user", "content": "x"}]})
    await env.ok("DELETE", "users/bob", "root", 204)
    assert env.world.count(Chat) == 0 and env.world.count(ChatMessage) == 0
    assert env.world.count(User, User.name == "bob") == 0
