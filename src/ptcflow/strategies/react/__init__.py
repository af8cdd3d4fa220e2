"""The ReAct strategy: native tool calling."""
