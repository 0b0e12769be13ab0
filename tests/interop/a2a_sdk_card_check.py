#!/usr/bin/env python3
"""This agent's card as the official A2A Python SDKs read it, both
versions (run by `tests/tests/a2a_v1.rs` with the Python of each venv).

Usage: a2a_sdk_card_check.py BASE_URL

With a2a-sdk 1.x (the v1.0 SDK):
- the card asked for with `A2A-Version: 1.0` is parsed strictly into the
  SDK's `AgentCard` protobuf message (`ParseDict`, unknown fields refused:
  the v1.0 JSON form of `a2a.proto`), and the SDK's own check of the
  proto's REQUIRED fields (`validate_proto_required_fields`) passes;
- the card asked for without the header (the one a v0.3 client gets too)
  is read by the SDK client's resolver (`A2ACardResolver`, its v0.3
  compatibility included), and what it read is printed.

With a2a-sdk 0.3.x: the card is read by that SDK's `A2ACardResolver`
(its pydantic `AgentCard`) and what it read is printed.

Prints one line `CARD <json>`: the SDK version, the interfaces the client
would choose from, each security scheme's kind and fields, and the
security requirements. Exits 1 with the reason when a parse fails.
"""

import asyncio
import importlib.metadata
import json
import sys

import httpx
from a2a.client import A2ACardResolver

SDK = importlib.metadata.version("a2a-sdk")


def v1_strict(card: dict) -> None:
    """The v1.0 card parses with no unknown field and no REQUIRED field
    missing."""
    from a2a.types.a2a_pb2 import AgentCard
    from a2a.utils.proto_utils import validate_proto_required_fields
    from google.protobuf.json_format import ParseDict

    message = ParseDict(card, AgentCard(), ignore_unknown_fields=False)
    try:
        validate_proto_required_fields(message)
    except Exception as error:  # the SDK's InvalidParamsError
        raise SystemExit(f"REQUIRED fields missing: {getattr(error, 'data', error)}")


def v1_summary(card) -> dict:
    from google.protobuf.json_format import MessageToDict

    schemes = {}
    for name, scheme in card.security_schemes.items():
        kind = scheme.WhichOneof("scheme")
        member = scheme.DESCRIPTOR.fields_by_name[kind].json_name
        schemes[name] = {member: MessageToDict(getattr(scheme, kind))}
    return {
        "interfaces": [
            [i.url, i.protocol_binding, i.protocol_version]
            for i in card.supported_interfaces
        ],
        "schemes": schemes,
        "requirements": [sorted(r.schemes.keys()) for r in card.security_requirements],
    }


def v03_summary(card) -> dict:
    schemes = {}
    for name, scheme in (card.security_schemes or {}).items():
        fields = scheme.root.model_dump(mode="json", exclude_none=True, by_alias=True)
        schemes[name] = {type(scheme.root).__name__: fields}
    return {
        "interfaces": [[card.url, card.preferred_transport, card.protocol_version]],
        "schemes": schemes,
        "requirements": [sorted(r.keys()) for r in (card.security or [])],
    }


async def main(base: str) -> dict:
    async with httpx.AsyncClient(timeout=30) as http:
        if SDK.startswith("0."):
            card = await A2ACardResolver(http, base).get_agent_card()
            return {"sdk": SDK, **v03_summary(card)}
        answer = await http.get(
            f"{base}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}
        )
        answer.raise_for_status()
        v1_strict(answer.json())
        card = await A2ACardResolver(http, base).get_agent_card()
        return {"sdk": SDK, "strict": "ok", **v1_summary(card)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("CARD " + json.dumps(asyncio.run(main(sys.argv[1])), sort_keys=True))
