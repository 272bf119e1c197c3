; Zig: a constant bound to a struct, enum, union or opaque is a class; fn declarations are
; functions (a generic type, ``fn List(comptime T: type) type``, is a function holding its
; struct). Tests (``test "name" { }``) stay in the module's text.
(Decl (FnProto function: (IDENTIFIER) @name) (Block) @body) @definition.function
(Decl (FnProto function: (IDENTIFIER) @name)) @definition.function
(Decl (VarDecl variable_type_function: (IDENTIFIER) @name
  (ErrorUnionExpr (SuffixExpr (ContainerDecl) @body)))) @definition.class

(FieldOrFnCall function_call: (IDENTIFIER) @reference.call)
((SuffixExpr variable_type_function: (IDENTIFIER) @reference.call . (FnCallArguments)))
; a type by the language's naming convention (``Point``, ``std.ArrayList``)
((SuffixExpr variable_type_function: (IDENTIFIER) @reference.type) (#match? @reference.type "^[A-Z]"))
((FieldOrFnCall field_access: (IDENTIFIER) @reference.type) (#match? @reference.type "^[A-Z]"))
