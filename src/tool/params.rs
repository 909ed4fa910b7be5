//! A small builder for a tool's parameter schema, so each parameter is declared once.
//!
//! ```
//! use brute::tool::Params;
//! let schema = Params::new()
//!     .string("file_path", "Path to the file", true)
//!     .integer("start_line", "First line, 1-based", false)
//!     .build();
//! assert_eq!(schema["required"][0], "file_path");
//! ```

use serde_json::{Map, Value, json};

/// Builds `{"type":"object","properties":{...},"required":[...]}`.
#[derive(Debug, Clone, Default)]
pub struct Params {
    properties: Map<String, Value>,
    required: Vec<String>,
}

impl Params {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a parameter of a JSON Schema primitive type (`string`, `integer`, `number`,
    /// `boolean`, `array`, `object`).
    pub fn param(self, name: &str, kind: &str, description: &str, required: bool) -> Self {
        self.schema(name, json!({"type": kind, "description": description}), required)
    }

    pub fn string(self, name: &str, description: &str, required: bool) -> Self {
        self.param(name, "string", description, required)
    }

    pub fn integer(self, name: &str, description: &str, required: bool) -> Self {
        self.param(name, "integer", description, required)
    }

    pub fn boolean(self, name: &str, description: &str, required: bool) -> Self {
        self.param(name, "boolean", description, required)
    }

    /// A string limited to the given values.
    pub fn enumeration(self, name: &str, values: &[&str], description: &str, required: bool) -> Self {
        self.schema(
            name,
            json!({"type": "string", "enum": values, "description": description}),
            required,
        )
    }

    /// An array whose items follow `items`.
    pub fn array(self, name: &str, items: Value, description: &str, required: bool) -> Self {
        self.schema(
            name,
            json!({"type": "array", "items": items, "description": description}),
            required,
        )
    }

    /// A parameter with a hand-written schema, for shapes the helpers do not cover.
    pub fn schema(mut self, name: &str, schema: Value, required: bool) -> Self {
        self.properties.insert(name.to_owned(), schema);
        if required {
            self.required.push(name.to_owned());
        }
        self
    }

    /// The finished JSON Schema. A tool with no parameters gets an empty object schema that
    /// every provider accepts.
    pub fn build(self) -> Value {
        let mut schema = json!({"type": "object", "properties": self.properties});
        if !self.required.is_empty() {
            schema["required"] = json!(self.required);
        }
        schema
    }
}
