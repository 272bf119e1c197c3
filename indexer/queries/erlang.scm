; Erlang: a function (all its clauses: one fun_decl) is a function, named by its first
; clause; records are types. A module is its file (``-module(name).``): not a definition.
(fun_decl . (function_clause name: (atom) @name body: (clause_body) @body)) @definition.function
(record_decl name: (atom) @name) @definition.type

(call expr: (atom) @reference.call)
(call expr: (remote fun: (atom) @reference.call))
(call expr: (remote module: (remote_module module: (atom) @reference.type)))
(internal_fun fun: (atom) @reference.call)
(record_expr name: (record_name name: (atom) @reference.type))
