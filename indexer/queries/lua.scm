; Lua: functions, named after the table they are stored in (``Queue.new``, ``Queue:push``
; -> ``Queue.push``), whether declared (``function M.f() end``) or assigned
; (``M.f = function() end``, ``local f = function() end``). Lua has no classes: a module's
; table gives the names their structure.
(function_declaration name: (identifier) @name body: (block) @body) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(function_declaration
  name: (dot_index_expression table: (identifier) @receiver field: (identifier) @name)
  body: (block) @body) @definition.function
(function_declaration
  name: (dot_index_expression table: (identifier) @receiver field: (identifier) @name)) @definition.function
(function_declaration
  name: (dot_index_expression table: (dot_index_expression field: (identifier) @receiver)
    field: (identifier) @name)
  body: (block) @body) @definition.function
(function_declaration name: (dot_index_expression field: (identifier) @name)) @definition.function
(function_declaration
  name: (method_index_expression table: (dot_index_expression field: (identifier) @receiver)
    method: (identifier) @name)
  body: (block) @body) @definition.function
(function_declaration name: (method_index_expression method: (identifier) @name)) @definition.function
(function_declaration
  name: (method_index_expression table: (identifier) @receiver method: (identifier) @name)
  body: (block) @body) @definition.function
(function_declaration
  name: (method_index_expression table: (identifier) @receiver method: (identifier) @name)) @definition.function
(assignment_statement
  (variable_list . name: (dot_index_expression table: (identifier) @receiver field: (identifier) @name) .)
  (expression_list . value: (function_definition body: (block) @body) .)) @definition.function
(assignment_statement
  (variable_list . name: (identifier) @name .)
  (expression_list . value: (function_definition body: (block) @body) .)) @definition.function
(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @name .)
    (expression_list . value: (function_definition body: (block) @body) .))) @definition.function

(function_call name: (identifier) @reference.call)
(function_call name: (dot_index_expression field: (identifier) @reference.call))
(function_call name: (method_index_expression method: (identifier) @reference.call))
