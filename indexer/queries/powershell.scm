; PowerShell: functions and class methods are functions, classes are classes. The braces of
; a script block are outside its node: class methods are not collapsed in skeletons (the
; braces would be doubled); a function's body is its statements, for cutting long ones.
(function_statement (function_name) @name (script_block (script_block_body) @body)) @definition.function
(function_statement (function_name) @name) @definition.function
(class_statement (simple_name) @name) @definition.class
(class_method_definition (simple_name) @name) @definition.function

(command command_name: (command_name) @reference.call)
