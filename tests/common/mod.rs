pub mod mcp_client;
pub mod standin;
