# Only functions are exported (docs/language.md, "Entry points"); the
# message says where the word goes.
export model Wrong { fn forward(x: f32[N]) { x } }   # error@1: only functions can be exported, not a model
# help: model Wrong { export fn forward(...) { ... } }
