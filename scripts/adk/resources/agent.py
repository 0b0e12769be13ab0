"""The ADK anchor of scripts/bench-adk.sh: the agent's turn in Google's ADK.

One LlmAgent on Gemini (the fake, through GOOGLE_GEMINI_BASE_URL) with
mcp-resources over stdio as its only tool set: the same model, the same
tool server and the same prompt as testdata/agent-gemini.yaml.
"""

import os

from google.adk.agents import LlmAgent
from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset
from mcp import StdioServerParameters

root_agent = LlmAgent(
    model="gemini-2.5-flash",
    name="resources",
    instruction="You are a resource manager.",
    tools=[
        McpToolset(
            connection_params=StdioConnectionParams(
                server_params=StdioServerParameters(
                    command=os.environ["MCP_RESOURCES"], args=[]
                )
            )
        )
    ],
)
